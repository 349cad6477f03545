#!/usr/bin/env bash
# README command 2: set up from nothing (idempotent) and run the whole test suite.
# pytest's exit status is returned as is (5 = no tests ran is a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ $# -gt 0 ] || set -- tests
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
