// The loops under every exact KL: max, sum of exponentials, and the KL sum, over a full
// vocabulary in f64. One source compiled for AVX-512, AVX2 and the x86-64 baseline, chosen at
// run time; all copies give the same bits (see kl_kernel_body.inc), so these sums do not depend
// on the CPU's vector width. (The one log per row that kl.cpp takes of a sum is glibc's.)
#pragma once
#include <cstddef>
#include <span>

namespace hd::analysis::kernel {

struct Kernel {
  const char* name;  // "avx512", "avx2", "baseline"
  float (*max_of)(const float* x, size_t n);  // n >= 1
  // sum_i exp(x_i - max), x_i <= max; exp_sum_into also writes each term to out[0..n).
  double (*exp_sum)(const float* x, size_t n, double max);
  double (*exp_sum_into)(const float* x, size_t n, double max, double* out);
  // KL(A || B) = sum_i p_i g(d_i), d_i = (a_i - lse_a) - (b_i - lse_b), g(d) = d - 1 + e^-d:
  // every term >= 0 (kl_kernel_body.inc). e_b: B's exp terms (exp_sum_into), inv_sum_b: 1 over
  // their sum, so that q_i = e_b[i] * inv_sum_b.
  double (*kl_terms)(const double* p, const float* a, double lse_a, const float* b, double lse_b,
                     const double* e_b, double inv_sum_b, size_t n);
};

// The widest copy this CPU runs, chosen once.
const Kernel& best();

// Every copy this CPU runs, widest first (the tests compare them).
std::span<const Kernel* const> supported();

}  // namespace hd::analysis::kernel
