#!/usr/bin/env bash
# C++ unit tests of the kernels (cpp/tests, GoogleTest) built with AddressSanitizer +
# UndefinedBehaviorSanitizer and run through ctest. Called by scripts/test.sh; needs the apt
# packages scripts/setup.sh installs (g++, libhwy-dev, libboost-dev, libgtest-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
CMAKE=.venv/bin/cmake
[ -x "$CMAKE" ] || CMAKE=cmake
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
$CMAKE -S . -B build/cpp-asan -G Ninja -DCMAKE_MAKE_PROGRAM="$(pwd)/.venv/bin/ninja" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPUFFER_BUILD_TESTS=ON \
  -DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="$SAN" >/dev/null
$CMAKE --build build/cpp-asan --target puffer_kernel_tests -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" >/dev/null
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  .venv/bin/ctest --test-dir build/cpp-asan --output-on-failure -j 2
