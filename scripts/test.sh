#!/usr/bin/env bash
# README command 2: set up from nothing (idempotent) and run the whole test suite:
#   1. docs/theorems.md is current and every cited theorem has a test (scripts/theorems.py --check)
#   2. the _core type stubs are current; ruff and mypy in strict mode (configured in pyproject.toml)
#   3. the pytest suite with the package's doctests (includes the property-based API fuzz test)
#   4. the C++ checks (scripts/cpp_checks.sh): GoogleTest unit tests of the kernels, the core built
#      with ASan + UBSan running the unit tests and the pytest suite, and a TSan build running the
#      unit tests and the threaded tests
# Extra arguments run pytest with them instead (no lint, no C++ checks).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
if [ $# -gt 0 ]; then
  bash scripts/setup.sh
  exec $PY -m pytest -q -p no:cacheprovider "$@"
fi
# The sanitizer builds (two jobs) compile from as soon as the build tools exist: beside the
# set-up's Release build, the pip installs, the checks and the Python suite.
bash scripts/setup.sh --tools
setsid bash scripts/cpp_checks.sh build > build-sanitizers.log 2>&1 &   # own process group
build_pid=$!
trap 'kill -- -$build_pid 2>/dev/null || true' EXIT   # a failed step stops the compilers too
bash scripts/setup.sh
$PY scripts/theorems.py --check
$PY scripts/stubs.py --check   # python/puffer/_core/*.pyi match the compiled bindings
.venv/bin/ruff check .
.venv/bin/mypy
# two pytest-xdist workers, a test file per worker at a time (module fixtures such as a Spark
# session stay in one process); the compilers take their share until the builds are done
$PY -m pytest -q -p no:cacheprovider -n 2 --dist loadfile tests --doctest-modules --pyargs puffer
wait $build_pid || { cat build-sanitizers.log; exit 1; }
trap - EXIT
bash scripts/cpp_checks.sh asan tsan
