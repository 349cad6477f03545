#!/usr/bin/env bash
# README command 2: set up from nothing (idempotent) and run the whole test suite:
# the pytest suite with the package's doctests. pytest's exit status is returned as is
# (5 = no tests ran is a failure). Extra arguments are passed to pytest instead of the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=.venv/bin/python
if [ $# -gt 0 ]; then
  exec $PY -m pytest -q -p no:cacheprovider "$@"
fi
$PY -m pytest -q -p no:cacheprovider tests --doctest-modules --pyargs puffer
