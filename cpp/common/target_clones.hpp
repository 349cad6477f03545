// PUFFER_TARGET_CLONES(...): GCC's target_clones (an AVX2+FMA clone chosen at load time through
// an ifunc), except in sanitizer builds. An ifunc resolver runs during relocation, before the
// sanitizer runtime is initialised, and an instrumented resolver crashed the TSan build at load
// (scripts/cpp_checks.sh); those builds compile for -march=native and need no dispatch.
#pragma once

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define PUFFER_TARGET_CLONES(...)
#else
#define PUFFER_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#endif
