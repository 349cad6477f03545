#!/usr/bin/env bash
# The C++ checks of the test command (scripts/test.sh runs this after the Python suite):
#   1. GoogleTest unit tests of the kernels (cpp/tests, ctest) in build-tests/
#   2. AddressSanitizer + UndefinedBehaviorSanitizer: the kernels and the unit tests built
#      instrumented (build-san/asan/), the unit tests and the pytest suite run against them (the
#      interpreter is not instrumented: libasan/libubsan are preloaded; leak checking is off
#      because CPython itself keeps its allocations at exit). tests/prod is left out: its Spark
#      and Dask workers are separate processes (a JVM, worker interpreters) that would not load
#      the preloaded runtime; they call the same kernels the rest of the suite covers. Tests
#      marked slow run in the plain suite only; the suite runs in pytest-xdist workers.
#   3. ThreadSanitizer: unit tests and the pytest tests marked `threaded` (build-san/tsan/;
#      tests/prod left out as well: pyarrow's own allocator threads are not instrumented).
# Both variants live in one build directory (CMake option PUFFER_SANITIZERS) and link one
# uninstrumented compile of the pybind11 glue (cpp/bindings: argument conversion only; every loop,
# threaded or not, is in the instrumented core). Compiling the glue instrumented, twice, took two
# thirds of the sanitizer build time.
# Any sanitizer report fails the run (halt_on_error, -fno-sanitize-recover).
# Usage: bash scripts/cpp_checks.sh [unit|build|asan|tsan]...   (default: asan tsan, which both run
# the unit tests; `unit` builds them once more in Release; `build` only compiles build-san/, so
# that scripts/test.sh can overlap the compilation with the Python suite)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export PATH="$PWD/.venv/bin:$PATH"   # cmake, ctest and ninja from the set-up's virtual environment
STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(asan tsan)
JOBS=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
SAN=build-san
# Sanitizer builds compile one SIMD target: Highway's static target at -march=native (AVX-512 on
# the CI machines, so the widest vectors and their tail handling are what is instrumented).
# Instrumenting every dispatch target of the Highway kernels took > 10 CPU-minutes for
# samplers.cpp alone; the other targets run in the Release suite (tests/test_sampling.py forces
# each compiled target). -O1 -g1: the usual sanitizer optimisation level, line tables only.
SAN_COMMON="-DHWY_COMPILE_ONLY_STATIC=1 -march=native -O1 -g1 -fno-omit-frame-pointer"
# Stack use-after-scope checking is off: it made the unrolled ChaCha20 and Highway loops of
# samplers.cpp take 165 s to compile instead of 34 s; heap and stack overflows, use after free and
# UBSan's checks stay on.
ASAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-sanitize-address-use-after-scope"
TSAN_FLAGS="-fsanitize=thread"
PYBIND11_DIR=$($PY -m pybind11 --cmakedir)

configure() {  # dir, extra flags...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DPUFFER_BUILD_TESTS=ON -DPython_EXECUTABLE="$PY" \
    -Dpybind11_DIR="$PYBIND11_DIR" "$@" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  cmake --build "$dir" -j "$JOBS" >> "$dir.log" 2>&1 || { tail -50 "$dir.log"; exit 1; }
}

build_sanitized() {  # a no-op when nothing changed since the last build
  configure "$SAN" -DCMAKE_BUILD_TYPE=None -DPUFFER_BUILD_PYTHON=ON -DCMAKE_CXX_FLAGS="$SAN_COMMON" \
    -DPUFFER_SANITIZERS="asan;tsan" -DPUFFER_SANITIZE_FLAGS_asan="$ASAN_FLAGS" \
    -DPUFFER_SANITIZE_FLAGS_tsan="$TSAN_FLAGS" -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF
}

sanitized() {  # variant, runtime libs to preload, ctest jobs, runtime symbols to probe, pytest args...
  local v=$1 libs=$2 jobs=$3 probes=$4; shift 4
  local dir="$SAN/$v" probe
  build_sanitized
  for probe in $probes; do   # the flags took effect: kernels and module call the sanitizer runtime
    # grep reads all of nm's output (grep -q would close the pipe early: SIGPIPE under pipefail)
    nm "$SAN/libpuffer_core_$v.a" 2>/dev/null | grep "$probe" > /dev/null \
      && nm -D "$dir"/_core.*.so | grep "$probe" > /dev/null \
      || { echo "$dir: $probe not referenced: the build is not instrumented"; exit 1; }
  done
  ctest --test-dir "$SAN" -R "^$v\." --output-on-failure -j "$jobs" | tail -3
  # a copy of the installed package whose _core is the instrumented one (`build` needs no
  # installed package: scripts/test.sh starts it before the set-up installs puffer)
  local site
  site=$($PY -c 'import puffer, os; print(os.path.dirname(puffer.__file__))')
  rm -rf "$dir/stage" && mkdir -p "$dir/stage"
  cp -r "$site" "$dir/stage/puffer"
  rm -f "$dir"/stage/puffer/_core.*.so
  cp "$dir"/_core.*.so "$dir/stage/puffer/"
  PYTHONPATH="$PWD/$dir/stage" LD_PRELOAD="$libs" "$PY" -c \
    "import puffer._core as c, sys; sys.exit(0 if c.__file__.startswith('$PWD/$dir/stage') else 'not the instrumented module: ' + c.__file__)"
  # --capture=sys: a sanitizer report is written to fd 2 by the runtime and the process exits;
  # pytest's default fd capture would swallow it
  PYTHONPATH="$PWD/$dir/stage" LD_PRELOAD="$libs" "$PY" -m pytest -q -p no:cacheprovider --capture=sys "$@"
}

for s in "${STAGES[@]}"; do
  case $s in
    unit)
      echo "== C++ unit tests (GoogleTest), Release build"
      configure build-tests -DCMAKE_BUILD_TYPE=Release
      ctest --test-dir build-tests --output-on-failure -j "$JOBS" | tail -3 ;;
    build)
      echo "== compiling the sanitizer builds ($SAN/asan, $SAN/tsan)"
      build_sanitized ;;
    asan)
      echo "== ASan + UBSan: unit tests and the pytest suite"
      # the suite runs in $JOBS pytest-xdist workers (nothing else runs in this stage); a report
      # aborts its worker, which xdist reports as a crashed test: the run fails. Tests marked slow
      # (statistical sample sizes, exact-arithmetic oracles, the year-long chain) run in the plain
      # suite only: they call the kernels that the other tests run here under the sanitizers.
      export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
      sanitized asan "$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so)" "$JOBS" \
        "__asan_report_load8 __ubsan_handle_" tests --ignore=tests/prod -x -n "$JOBS" --dist loadfile -m "not slow"
      unset ASAN_OPTIONS UBSAN_OPTIONS ;;
    tsan)
      echo "== TSan: unit tests and the threaded pytest tests"
      export TSAN_OPTIONS=halt_on_error=1:exitcode=66
      # tests/prod left out here too: pyarrow's bundled mimalloc is not instrumented, and TSan
      # reports its lock-free thread-heap set-up as a race (_mi_theap_init in libarrow).
      # forks_threads tests fork a process with live threads, which TSan does not support ("starting
      # new threads after multi-threaded fork is not supported"); they run in the plain and ASan suites.
      sanitized tsan "$(g++ -print-file-name=libtsan.so)" 1 "__tsan_read8 __tsan_func_entry" \
        tests --ignore=tests/prod -m "threaded and not forks_threads" -x
      unset TSAN_OPTIONS ;;
    *) echo "unknown stage $s (unit, build, asan, tsan)"; exit 2 ;;
  esac
done
