#!/usr/bin/env bash
# Set up, then run every benchmark suite and the C++ google-benchmark target; writes bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python bench/run.py "$@"
