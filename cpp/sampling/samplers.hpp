// Vectorised, multi-threaded, counter-based noise samplers (issue 5). The same transforms also
// run on keyed ChaCha20 words for published noise (keyed_stream.hpp); this header's layouts
// are those of the Philox streams used by rng= experiments.
//
// Stream model: a stream is (key k0,k1, word w) = 96 bits. Philox4x32-10 block for counter
// (c0,c1,c2,c3) = (index lo, index hi, sub, w). Two layouts, fixed per distribution:
//  * "pair" samplers (uniform, exponential, Laplace, Gaussian, Cauchy, logistic): block q gives
//    64-bit words (w0, w1) = (x0 | x1<<32, x2 | x3<<32); value 2q uses w0 and value 2q+1 uses w1
//    (Box-Muller uses both words for the pair of normals 2q, 2q+1). sub = 0.
//  * "rejection" samplers (Student-t, GenCauchy, generalized Gaussian): value i uses the blocks
//    (i, sub = attempt) [Student-t] or (i, sub = 2*attempt + {0,1}) [gen. Gaussian] until
//    accepted; each value owns its sub-stream, so acceptance of one value never shifts another.
// The top two bits of w tag the layout (enum Layout below) so that draws of different layouts
// from one stream never share a block.
// Hence value i depends only on (key, w, i): output is bitwise identical for every thread count
// and every chunking. Across SIMD targets the random bits are identical but the transcendental
// functions (Highway contrib/math, FMA or not) differ in the last ulps, so results agree to a
// few ulps, not bitwise.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace puffer::sampling {

enum class Kind : int {
  Uniform = 0,
  Exponential = 1,
  Laplace = 2,
  Gaussian = 3,
  Cauchy = 4,
  StudentT = 5,
  GenGaussian = 6,
  Logistic = 7,
  GenCauchy = 8,
};

// Counter-word layouts: the top two bits of the 32-bit word w tag the layout, so draws of
// different layouts from one stream key never share a Philox block. The one source of these
// tags (exported to Python by the binding; the partial-data samplers use PartialValue).
enum class Layout : std::uint32_t { Pair = 0, StudentT = 1, GenGaussian = 2, PartialValue = 3 };
constexpr unsigned kLayoutShift = 30;
constexpr std::uint32_t kWordMask = (1u << kLayoutShift) - 1u;

constexpr Layout layout_of(Kind k) {
  return k == Kind::StudentT || k == Kind::GenCauchy ? Layout::StudentT
         : k == Kind::GenGaussian                    ? Layout::GenGaussian
                                                     : Layout::Pair;
}

// Smallest Student-t nu (and GenCauchy k - 1) the samplers accept: see make_kernel_params.
constexpr double kMinStudentNu = 0.05;

struct StreamKey {
  std::uint32_t k0 = 0, k1 = 0, word = 0;
};

// Kernel constants derived from the user parameters (see make_kernel_params).
struct KernelParams {
  int kind = 0;
  double scale = 1.0;   // multiplier of the standard variate
  double nu = 1.0;      // Student-t degrees of freedom
  double ma_d = 0.0, ma_c = 0.0;  // Marsaglia-Tsang d, c for Gamma(a'), a' = a or a + 1
  double log_d = 0.0;
  double inv_a = 0.0;   // 1/a when a < 1 (boost U^(1/a)), else 0
  double inv_beta = 1.0;
};

// Validates (kind, p0, p1) and returns the kernel constants. Parameter meaning per kind:
// uniform: -; exponential: p0 = scale; laplace: p0 = b; gaussian: p0 = sigma; cauchy: p0 = gamma;
// student_t: p0 = nu, p1 = scale; gen_gaussian: p0 = beta, p1 = scale; logistic: p0 = scale;
// gen_cauchy: p0 = gamma, p1 = k (> 1). Throws InvalidArgument on bad values.
KernelParams make_kernel_params(int kind, double p0, double p1);

// out[j] = (in ? in[j] : 0) + X_{start + j} for j < n, X the stream of `kind`. in may equal out.
// threads: 0 = all cores. float32 variants compute in double and round once to float.
void fill_f64(const KernelParams& p, StreamKey key, std::uint64_t start, std::size_t n, const double* in,
              double* out, unsigned threads);
void fill_f32(const KernelParams& p, StreamKey key, std::uint64_t start, std::size_t n, const float* in,
              float* out, unsigned threads);

// SIMD dispatch: names of the targets compiled in and supported by this CPU (best first), the
// target in use, and forcing one ("" or "auto" = best). The env var PUFFER_SIMD is read once
// at first use.
std::vector<std::string> simd_targets();
std::string simd_target();
void set_simd_target(const std::string& name);

}  // namespace puffer::sampling
