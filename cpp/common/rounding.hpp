// Directed rounding helpers. Every epsilon, delta, sensitivity or scale that reaches a
// guarantee passes through one of these so that float error lands on the safe side.
#pragma once
#include <cmath>
#include <limits>

namespace puffer {

inline double next_up(double x) { return std::nextafter(x, std::numeric_limits<double>::infinity()); }
inline double next_down(double x) { return std::nextafter(x, -std::numeric_limits<double>::infinity()); }

// Moves x up by `ulps` units in the last place plus a relative margin; used after a short
// chain of correctly-rounded-ish operations (each <= 1 ulp) to cover their accumulated error.
inline double round_up(double x, int ulps = 4) {
  if (!std::isfinite(x)) return x;
  for (int i = 0; i < ulps; ++i) x = next_up(x);
  return x;
}
inline double round_down(double x, int ulps = 4) {
  if (!std::isfinite(x)) return x;
  for (int i = 0; i < ulps; ++i) x = next_down(x);
  return x;
}

}  // namespace puffer
