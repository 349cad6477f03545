// Each cpp/bindings/<kernel>.cpp registers its own submodule of puffer._core at load time,
// so kernels can be bound independently:  PUFFER_BIND_SUBMODULE(transport, m) { m.def(...); }
#pragma once
#include <pybind11/pybind11.h>

#include <vector>

namespace puffer::bind {

using InitFn = void (*)(pybind11::module_&);
struct Entry {
  const char* name;
  InitFn init;
};
std::vector<Entry>& registry();
inline int register_submodule(const char* name, InitFn fn) {
  registry().push_back({name, fn});
  return 0;
}

}  // namespace puffer::bind

#define PUFFER_BIND_SUBMODULE(NAME, M)                                                   \
  static void puffer_bind_init_##NAME(pybind11::module_& M);                            \
  static const int puffer_bind_reg_##NAME =                                              \
      ::puffer::bind::register_submodule(#NAME, &puffer_bind_init_##NAME);               \
  static void puffer_bind_init_##NAME(pybind11::module_& M)
