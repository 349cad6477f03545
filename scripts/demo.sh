#!/usr/bin/env bash
# README command 1: set up from nothing (idempotent) and run the main job on the built-in example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m puffer demo
