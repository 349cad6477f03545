// Error types of the core. The bindings translate them into puffer's Python exceptions
// (InvalidArgument -> puffer.ParameterError, a ValueError; NumericalFailure ->
// puffer.NumericalError), so no C++ failure ever aborts the interpreter.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace puffer {

// A bad argument: names the parameter, its value and what was expected.
class InvalidArgument : public std::invalid_argument {
 public:
  InvalidArgument(std::string param, std::string value, std::string expected)
      : std::invalid_argument("parameter '" + param + "' = " + value + ": expected " + expected),
        param_(std::move(param)), value_(std::move(value)), expected_(std::move(expected)) {}
  const std::string& param() const { return param_; }
  const std::string& value() const { return value_; }
  const std::string& expected() const { return expected_; }

 private:
  std::string param_, value_, expected_;
};

// A computation that could not be certified (quadrature did not converge, overflow, ...).
// Raised instead of returning a number that might be on the unsafe side.
class NumericalFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class T>
std::string to_str(const T& v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// Throws InvalidArgument unless cond holds.
template <class T>
inline void require(bool cond, const char* param, const T& value, const char* expected) {
  if (!cond) throw InvalidArgument(param, to_str(value), expected);
}

}  // namespace puffer
