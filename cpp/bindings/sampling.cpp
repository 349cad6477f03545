// Bindings of cpp/sampling: thin conversions numpy <-> pointers; loops run without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>

#include "bindings/registry.hpp"
#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "sampling/buffers.hpp"
#include "sampling/chacha20.hpp"
#include "sampling/keyed_stream.hpp"
#include "sampling/lattice.hpp"
#include "sampling/philox.hpp"
#include "sampling/samplers.hpp"
#include "sampling/secure.hpp"

namespace py = pybind11;
namespace ps = puffer::sampling;

namespace {

// A writable, C-contiguous 1-D-compatible buffer of T (any shape; treated as flat).
template <class T>
T* flat_ptr(const py::array& a, const char* name, bool writable, std::size_t& n) {
  if (!py::isinstance<py::array_t<T>>(a) || !a.dtype().is(py::dtype::of<T>())) {
    throw puffer::InvalidArgument(name, "array of dtype " + std::string(py::str(a.dtype())),
                                  std::string("dtype ") + std::string(py::str(py::dtype::of<T>())));
  }
  if (!(a.flags() & py::array::c_style)) throw puffer::InvalidArgument(name, "non-contiguous array", "a C-contiguous array");
  if (writable && !a.writeable()) throw puffer::InvalidArgument(name, "read-only array", "a writable array");
  n = std::size_t(a.size());
  return static_cast<T*>(const_cast<void*>(a.data()));
}

template <class T>
void fill(int kind, double p0, double p1, std::uint32_t k0, std::uint32_t k1, std::uint32_t word,
          std::uint64_t start, py::array out, py::object in, unsigned threads) {
  const ps::KernelParams kp = ps::make_kernel_params(kind, p0, p1);
  std::size_t n = 0, n_in = 0;
  T* o = flat_ptr<T>(out, "out", true, n);
  const T* i = nullptr;
  if (!in.is_none()) {
    i = flat_ptr<T>(in.cast<py::array>(), "values", false, n_in);
    if (n_in != n) throw puffer::InvalidArgument("out", "size " + std::to_string(n), "size " + std::to_string(n_in));
  }
  py::gil_scoped_release release;
  if constexpr (std::is_same_v<T, double>) {
    ps::fill_f64(kp, {k0, k1, word}, start, n, i, o, threads);
  } else {
    ps::fill_f32(kp, {k0, k1, word}, start, n, i, o, threads);
  }
}

// A 32-byte secret as eight little-endian 32-bit words.
ps::KeyedKey keyed_key(const py::bytes& key, std::uint32_t word) {
  const std::string k = key;
  if (k.size() != 32) throw puffer::InvalidArgument("key", std::to_string(k.size()) + " bytes", "32 bytes");
  ps::KeyedKey out;
  for (std::size_t i = 0; i < 8; ++i) {
    std::uint32_t v = 0;
    for (std::size_t b = 0; b < 4; ++b) v |= std::uint32_t(static_cast<unsigned char>(k[4 * i + b])) << (8 * b);
    out.key[i] = v;
  }
  out.word = word;
  return out;
}

template <class T>
void fill_keyed(int kind, double p0, double p1, const py::bytes& key, std::uint32_t word, std::uint64_t start,
                py::array out, py::object in, unsigned threads) {
  const ps::KernelParams kp = ps::make_kernel_params(kind, p0, p1);
  const ps::KeyedKey kk = keyed_key(key, word);
  std::size_t n = 0, n_in = 0;
  T* o = flat_ptr<T>(out, "out", true, n);
  const T* i = nullptr;
  if (!in.is_none()) {
    i = flat_ptr<T>(in.cast<py::array>(), "values", false, n_in);
    if (n_in != n) throw puffer::InvalidArgument("out", "size " + std::to_string(n), "size " + std::to_string(n_in));
  }
  py::gil_scoped_release release;
  if constexpr (std::is_same_v<T, double>) {
    ps::fill_keyed_f64(kp, kk, start, n, i, o, threads);
  } else {
    ps::fill_keyed_f32(kp, kk, start, n, i, o, threads);
  }
}

const std::uint8_t* key_ptr(const py::object& key, std::string& holder) {
  if (key.is_none()) return nullptr;
  holder = key.cast<std::string>();
  if (holder.size() != 32) throw puffer::InvalidArgument("key", std::to_string(holder.size()) + " bytes", "32 bytes");
  return reinterpret_cast<const std::uint8_t*>(holder.data());
}

}  // namespace

PUFFER_BIND_SUBMODULE(sampling, m) {
  m.doc() = "Counter-based SIMD samplers and the secure (exact lattice) mode. Use puffer.sampling.";
  // The C++ enum is the one source of the sampler codes (puffer.sampling.KINDS reads them by name).
  py::enum_<ps::Kind>(m, "Kind", py::arithmetic(), "sampler kinds (sampling/samplers.hpp)")
      .value("uniform", ps::Kind::Uniform)
      .value("exponential", ps::Kind::Exponential)
      .value("laplace", ps::Kind::Laplace)
      .value("gaussian", ps::Kind::Gaussian)
      .value("cauchy", ps::Kind::Cauchy)
      .value("student_t", ps::Kind::StudentT)
      .value("gen_gaussian", ps::Kind::GenGaussian)
      .value("logistic", ps::Kind::Logistic)
      .value("gen_cauchy", ps::Kind::GenCauchy);
  py::enum_<ps::Layout>(m, "Layout", py::arithmetic(), "counter-word layout tags (sampling/samplers.hpp)")
      .value("pair", ps::Layout::Pair)
      .value("student_t", ps::Layout::StudentT)
      .value("gen_gaussian", ps::Layout::GenGaussian)
      .value("partial_value", ps::Layout::PartialValue);
  m.attr("LAYOUT_SHIFT") = ps::kLayoutShift;
  // True in the sanitizer builds (scripts/cpp_checks.sh), which compile only Highway's static
  // target: no dispatch, no SCALAR/EMU128 fallback. Release builds and wheels: False.
#ifdef HWY_COMPILE_ONLY_STATIC
  m.attr("STATIC_TARGET_ONLY") = true;
#else
  m.attr("STATIC_TARGET_ONLY") = false;
#endif
  m.def("layout_of", [](ps::Kind k) { return ps::layout_of(k); }, py::arg("kind"),
        "the counter-word layout a sampler kind draws with");
  m.def("fill_f64", &fill<double>, py::arg("kind"), py::arg("p0"), py::arg("p1"), py::arg("k0"), py::arg("k1"),
        py::arg("word"), py::arg("start"), py::arg("out"), py::arg("values") = py::none(), py::arg("threads") = 0);
  m.def("fill_f32", &fill<float>, py::arg("kind"), py::arg("p0"), py::arg("p1"), py::arg("k0"), py::arg("k1"),
        py::arg("word"), py::arg("start"), py::arg("out"), py::arg("values") = py::none(), py::arg("threads") = 0);
  m.def("fill_keyed_f64", &fill_keyed<double>, py::arg("kind"), py::arg("p0"), py::arg("p1"), py::arg("key"),
        py::arg("word"), py::arg("start"), py::arg("out"), py::arg("values") = py::none(), py::arg("threads") = 0,
        "Keyed ChaCha20 stream (sampling/keyed_stream.hpp): out = values + X[start:start+n]; key: 32 secret bytes.");
  m.def("fill_keyed_f32", &fill_keyed<float>, py::arg("kind"), py::arg("p0"), py::arg("p1"), py::arg("key"),
        py::arg("word"), py::arg("start"), py::arg("out"), py::arg("values") = py::none(), py::arg("threads") = 0);
  m.def("keyed_pair_words",
        [](const py::bytes& key, std::uint32_t word, std::uint64_t block) {
          return ps::keyed_pair_words(keyed_key(key, word), block);
        },
        py::arg("key"), py::arg("word"), py::arg("block"),
        "The eight 64-bit words of pair-layout block `block` (scalar reference, for tests).");
  m.def("keyed_reject_words",
        [](const py::bytes& key, std::uint32_t word, std::uint32_t tag, std::uint64_t index, std::uint32_t attempt) {
          puffer::require(tag == 1 || tag == 2, "tag", tag, "1 (Student-t) or 2 (generalized Gaussian)");
          puffer::require(attempt <= ps::kKeyedMaxAttempt, "attempt", attempt, "an attempt < 2^30");
          return ps::keyed_reject_words(keyed_key(key, word), tag, index, attempt);
        },
        py::arg("key"), py::arg("word"), py::arg("tag"), py::arg("index"), py::arg("attempt"),
        "The eight 64-bit words of attempt `attempt` of value `index` (rejection layouts; for tests).");
  m.def("keyed_lattice_words",
        [](const py::bytes& key, std::uint32_t word, std::uint64_t block) {
          return ps::keyed_lattice_words(keyed_key(key, word), block);
        },
        py::arg("key"), py::arg("word"), py::arg("block"),
        "The eight 64-bit words of lattice fast block `block` (scalar reference, for tests).");
  m.def("keyed_lattice_fill",
        [](const py::bytes& key, std::uint32_t word, std::uint64_t j0, std::size_t nb, double log_scale) {
          const ps::KeyedKey kk = keyed_key(key, word);
          puffer::require(nb <= (std::size_t(1) << 24), "nb", nb, "at most 2^24 blocks");
          py::array_t<std::uint64_t> words(8 * nb);
          py::array_t<double> hints(8 * nb);
          std::uint64_t* w = words.mutable_data();
          double* h = hints.mutable_data();
          {
            py::gil_scoped_release release;
            ps::keyed_lattice_fill(kk, j0, nb, w, h, log_scale);
          }
          return py::make_tuple(words, hints);
        },
        py::arg("key"), py::arg("word"), py::arg("j0"), py::arg("nb"), py::arg("log_scale"),
        "The SIMD words and hints of lattice fast blocks j0 .. j0 + nb - 1 (for tests).");
  m.def("lattice_sample",
        [](int family, std::uint64_t S, const py::bytes& key, std::uint32_t word, std::uint64_t start, std::size_t n,
           unsigned threads) {
          const ps::LatticeLaw law{family, S};
          ps::validate_lattice(law);
          const ps::KeyedKey kk = keyed_key(key, word);
          py::array_t<std::int64_t> out(n);
          std::int64_t* o = out.mutable_data();
          {
            py::gil_scoped_release release;
            ps::lattice_keyed_int(law, kk, start, n, o, threads);
          }
          return out;
        },
        py::arg("family"), py::arg("S"), py::arg("key"), py::arg("word"), py::arg("start"), py::arg("n"),
        py::arg("threads") = 0,
        "Lattice noise integers of stream positions start .. start + n - 1 (sampling/lattice.hpp): family 0 "
        "rounded Laplace (s = S 2^-64), 1 discrete Gaussian (w = S 2^-64).");
  m.def("lattice_add",
        [](int family, std::uint64_t S, int g_exp, const py::bytes& key, std::uint32_t word, std::uint64_t start,
           py::array values, py::array out, unsigned threads) {
          const ps::LatticeLaw law{family, S};
          ps::validate_lattice(law);
          const ps::KeyedKey kk = keyed_key(key, word);
          std::size_t n = 0, n_in = 0;
          const double* i = flat_ptr<double>(values, "values", false, n_in);
          double* o = flat_ptr<double>(out, "out", true, n);
          if (n != n_in) throw puffer::InvalidArgument("out", "size " + std::to_string(n), "size " + std::to_string(n_in));
          py::gil_scoped_release release;
          ps::lattice_keyed_add_f64(law, g_exp, kk, start, n, i, o, threads);
        },
        py::arg("family"), py::arg("S"), py::arg("g_exp"), py::arg("key"), py::arg("word"), py::arg("start"),
        py::arg("values"), py::arg("out"), py::arg("threads") = 0,
        "out = (round_half_even(values 2^-g_exp) + Z) 2^g_exp with Z the lattice noise of positions start ...");
  m.def("lattice_tables",
        [](int family, std::uint64_t S) {
          const auto t = ps::lattice_tables(ps::LatticeLaw{family, S});
          py::dict d;
          d["lbits"] = t->lbits;
          d["A"] = py::array_t<std::uint64_t>(t->A.size(), t->A.data());
          d["B"] = py::array_t<std::uint64_t>(t->B.size(), t->B.data());
          d["log_scale"] = t->log_scale;
          d["T63"] = py::array_t<std::uint64_t>(t->T63.size(), t->T63.data());
          d["gbits"] = t->gbits;
          d["guide"] = py::array_t<std::uint32_t>(t->guide.size(), t->guide.data());
          return d;
        },
        py::arg("family"), py::arg("S"), "The threshold tables of a lattice law (for tests).");
  m.def("lattice_magnitude",
        [](int family, std::uint64_t S, std::uint64_t u, const std::vector<std::uint64_t>& extra, bool fast,
           std::int64_t hint) {
          return ps::lattice_magnitude_for_tests(ps::LatticeLaw{family, S}, u, extra, fast, hint);
        },
        py::arg("family"), py::arg("S"), py::arg("u"), py::arg("extra"), py::arg("fast"), py::arg("hint") = 0,
        "|Z| for a uniform whose first 63 bits are u and next words `extra`: the exact path alone, or "
        "(fast=True) the tables from `hint` (-1 where they cannot decide). For tests.");
  m.def("fill_constant",
        [](py::array out, double value, unsigned threads) {
          std::size_t n = 0;
          double* o = flat_ptr<double>(out, "out", true, n);
          py::gil_scoped_release release;
          ps::fill_constant(o, n, value, threads);
        },
        py::arg("out"), py::arg("value"), py::arg("threads") = 0,
        "The memory-write ceiling the benchmark compares against: the same pool, 2^15-value tasks, "
        "nothing but stores.");
  m.def("first_nonfinite",
        [](py::array values, unsigned threads) -> long long {
          // a parallel read-only pass, so add_noise rejects bad input before writing anything
          std::size_t n = 0;
          if (values.dtype().is(py::dtype::of<double>())) {
            const double* v = flat_ptr<double>(values, "values", false, n);
            py::gil_scoped_release release;
            return ps::first_nonfinite(v, n, threads);
          }
          const float* v = flat_ptr<float>(values, "values", false, n);
          py::gil_scoped_release release;
          return ps::first_nonfinite(v, n, threads);
        },
        py::arg("values"), py::arg("threads") = 0, "Index of the first NaN/inf in a float32/float64 buffer, or -1.");
  m.def("simd_targets", &ps::simd_targets, "SIMD targets compiled in and supported by this CPU, best first.");
  m.def("simd_target", &ps::simd_target, "The SIMD target in use.");
  m.def("set_simd_target", &ps::set_simd_target, py::arg("name"),
        "Force a SIMD target by name ('auto' = best); affects all later calls in this process.");
  m.def("philox4x32_10",
        [](std::array<std::uint32_t, 4> c, std::uint32_t k0, std::uint32_t k1) { return ps::philox4x32_10(c, k0, k1); },
        py::arg("counter"), py::arg("k0"), py::arg("k1"), "Scalar Philox4x32-10 block (reference).");
  m.def("chacha20_block", [](std::array<std::uint32_t, 16> s) { return ps::chacha20_block(s); }, py::arg("state"),
        "RFC 8439 ChaCha20 block function (for the known-answer test).");
  m.def("secure_sample",
        [](int kind, std::uint64_t num, std::uint64_t den, std::uint64_t t, std::size_t n, unsigned threads,
           py::object key) {
          std::string holder;
          const std::uint8_t* k = key_ptr(key, holder);
          ps::SecureParams p{kind, num, den, t};
          ps::validate_secure(p);
          py::array_t<std::int64_t> out(n);
          std::int64_t* o = out.mutable_data();
          {
            py::gil_scoped_release release;
            ps::secure_sample_int(p, o, n, threads, k);
          }
          return out;
        },
        py::arg("kind"), py::arg("num"), py::arg("den"), py::arg("t"), py::arg("n"), py::arg("threads") = 0,
        py::arg("key") = py::none(),
        "Exact discrete Laplace (kind 0, scale num/den) or discrete Gaussian (kind 1, sigma^2 = num/den, "
        "t = floor(sigma)+1) integers. key: 32 bytes for tests only (None = OS entropy).");
  m.def("secure_add",
        [](int kind, std::uint64_t num, std::uint64_t den, std::uint64_t t, int g_exp, py::array values,
           py::array out, unsigned threads, py::object key) {
          std::string holder;
          const std::uint8_t* k = key_ptr(key, holder);
          std::size_t n = 0, n_in = 0;
          const double* i = flat_ptr<double>(values, "values", false, n_in);
          double* o = flat_ptr<double>(out, "out", true, n);
          if (n != n_in) throw puffer::InvalidArgument("out", "size " + std::to_string(n), "size " + std::to_string(n_in));
          ps::SecureParams p{kind, num, den, t};
          py::gil_scoped_release release;
          ps::secure_add_f64(p, g_exp, i, o, n, threads, k);
        },
        py::arg("kind"), py::arg("num"), py::arg("den"), py::arg("t"), py::arg("g_exp"), py::arg("values"),
        py::arg("out"), py::arg("threads") = 0, py::arg("key") = py::none());
}
