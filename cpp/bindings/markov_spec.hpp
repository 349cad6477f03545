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

inline models::MarkovChainSpec markov_spec(const MarkovF64& trans, const MarkovF64& init, const MarkovI64& values,
                                           std::size_t T) {
  require(trans.ndim() == 3 && trans.shape(1) == trans.shape(2), "trans", trans.ndim(),
          "an array of shape (n_theta, k, k)");
  const std::size_t n = static_cast<std::size_t>(trans.shape(0)), k = static_cast<std::size_t>(trans.shape(1));
  require(init.ndim() == 2 && static_cast<std::size_t>(init.shape(0)) == n && static_cast<std::size_t>(init.shape(1)) == k,
          "init", init.ndim(), "an array of shape (n_theta, k)");
  require(values.ndim() == 1 && static_cast<std::size_t>(values.shape(0)) == k, "values", values.ndim(),
          "k integer state values");
  return models::MarkovChainSpec{trans.data(), init.data(), n, k, values.data(), T};
}

}  // namespace puffer::bind
