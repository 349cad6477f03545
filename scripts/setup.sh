#!/usr/bin/env bash
# Idempotent set-up from nothing on Debian (root): system packages, a virtual environment in
# .venv, and puffer built and installed into it with its test and bench extras.
# `--tools`: stop after the build tools (system packages, .venv, cmake, ninja, pybind11), enough
# for scripts/cpp_checks.sh to start compiling while the rest of the set-up runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step is announced on stderr with the time since set-up began: a first run spends minutes
# in apt, pip and the C++ build, which print nothing of their own.
T0=$SECONDS
step() { echo "setup [$(printf '%3d' $((SECONDS - T0)))s] $*" >&2; }

APT_PKGS="g++ libhwy-dev libboost-dev libbenchmark-dev libgtest-dev chromium"  # chromium: the docs browser test
missing=""
for p in $APT_PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
python3 -c 'import sysconfig,os,sys; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"],"Python.h")) else 1)' \
  || missing="$missing python3-dev"
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing="$missing python3-venv"
# puffer-privacy[spark] tests start a local Spark: any Java 17+ runtime will do
command -v java >/dev/null 2>&1 || missing="$missing openjdk-17-jre-headless"
if [ -n "$missing" ]; then
  step "apt-get install$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq $missing >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  step "creating the virtual environment .venv"
  python3 -m venv .venv
fi
PY=.venv/bin/python
# Build tools first: the project is installed without build isolation so that the CMake
# build directory (build/) is reused and re-runs rebuild only what changed.
step "pip: build tools (scikit-build-core, pybind11, cmake, ninja)"
$PY -m pip install -q --disable-pip-version-check --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
$PY -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" "pybind11>=2.12" "numpy>=1.24" \
  "cmake>=3.18" ninja setuptools wheel  # setuptools + wheel: pyspark ships only an sdist
if [ "${1:-}" = "--tools" ]; then
  step "build tools ready"
  exit 0
elif [ $# -gt 0 ]; then
  echo "usage: bash scripts/setup.sh [--tools]" >&2
  exit 2
fi
# the distribution was called "puffer" before it became "puffer-privacy": both own puffer/, so
# the old record goes first (pip then reinstalls every file of the new one)
if $PY -m pip show -q puffer >/dev/null 2>&1; then
  step "removing the old distribution name 'puffer' (now puffer-privacy)"
  $PY -m pip uninstall -q -y puffer
fi
step "building the C++ core and installing puffer with its extras (first run: ~10 minutes on 2 cores)"
# a heartbeat every 30 s while pip builds quietly
( while sleep 30; do step "  ... still building"; done ) &
beat=$!
trap 'kill $beat 2>/dev/null || true' EXIT
$PY -m pip install -q --disable-pip-version-check --no-build-isolation ".[test,bench,plot,io,spark,dask,docs]"
kill $beat 2>/dev/null || true
trap - EXIT
step "ready"
