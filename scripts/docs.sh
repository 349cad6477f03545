#!/usr/bin/env bash
# README command 3: set up from nothing (idempotent) and build the documentation site into
# build/docs/ with warnings as errors, then check it in a real browser:
#   1. scripts/setup.sh (apt packages incl. Debian's chromium, .venv, puffer with its docs extra);
#   2. sphinx-build -W: the tutorials are executed (a wrong example fails the build), the API
#      reference is generated from the docstrings, the figures are drawn by the code;
#   3. tests/docs: headless Chromium opens every page (renders, no console error, no broken link)
#      and runs a search.
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$SECONDS
# PUFFER_DOCS_PYTHON=/path/to/python skips the set-up and uses that interpreter's puffer (a
# developer's existing environment; with PUFFER_DOCS_SOURCE=1 and PYTHONPATH=python the checkout's).
if [ -z "${PUFFER_DOCS_PYTHON:-}" ]; then bash scripts/setup.sh; fi
PY=${PUFFER_DOCS_PYTHON:-.venv/bin/python}
rm -rf build/docs build/docs-doctrees docs/api docs/jupyter_execute
mkdir -p build
echo "docs: sphinx-build (tutorials executed)" >&2
# (the Jupyter kernel's "running over TCP without encryption" notice is not a Sphinx warning)
MPLBACKEND=Agg $PY -m sphinx -W --keep-going -q -b html -d build/docs-doctrees docs build/docs
echo "docs: built build/docs/index.html in $((SECONDS - T0)) s; browser check" >&2
PUFFER_DOCS_SITE=build/docs $PY -m pytest -q -p no:cacheprovider tests/docs
echo "docs: OK in $((SECONDS - T0)) s" >&2
