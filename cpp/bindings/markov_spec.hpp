// The Markov-chain spec of the models and Kantorovich bindings, from numpy arrays: shapes are
// checked here (puffer::require names the argument); values are checked by models::validate.
#pragma once
#include <pybind11/numpy.h>

#include <cstddef>
#include <cstdint>

#include "common/errors.hpp"
#include "models/markov.hpp"

namespace puffer::bind {

using MarkovF64 = pybind11::array_t<double, pybind11::array::c_style | pybind11::array::forcecast>;
using MarkovI64 = pybind11::array_t<std::int64_t, pybind11::array::c_style | pybind11::array::forcecast>;

// trans: (n_theta, k, k) (time-homogeneous) or (n_theta, period, k, k) (the step X_t -> X_{t+1}
// uses matrix t mod period, models::MarkovChainSpec).
inline models::MarkovChainSpec markov_spec(const MarkovF64& trans, const MarkovF64& init, const MarkovI64& values,
                                           std::size_t T) {
  const pybind11::ssize_t d = trans.ndim();
  require((d == 3 || d == 4) && trans.shape(d - 1) == trans.shape(d - 2), "trans", d,
          "an array of shape (n_theta, k, k) or (n_theta, period, k, k)");
  require(d == 3 || trans.shape(1) >= 1, "trans period", d == 4 ? trans.shape(1) : 1,
          "at least one matrix per prior");
  const std::size_t n = static_cast<std::size_t>(trans.shape(0)), k = static_cast<std::size_t>(trans.shape(d - 1));
  const std::size_t period = d == 4 ? static_cast<std::size_t>(trans.shape(1)) : 1;
  require(init.ndim() == 2 && static_cast<std::size_t>(init.shape(0)) == n && static_cast<std::size_t>(init.shape(1)) == k,
          "init", init.ndim(), "an array of shape (n_theta, k)");
  require(values.ndim() == 1 && static_cast<std::size_t>(values.shape(0)) == k, "values", values.ndim(),
          "k integer state values");
  return models::MarkovChainSpec{trans.data(), init.data(), n, k, values.data(), T, period};
}

}  // namespace puffer::bind
