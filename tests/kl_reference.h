// KL(A || B) as heterodyne computed it before the vector kernel (analysis/kl_kernel.h): scalar
// std::exp, one running sum, in f64. The tests hold the kernel to it and the benchmark times
// against it; nothing in src/ uses it.
#pragma once
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace hd::testing {

// p_a: scratch, reused from call to call as the loop before the kernel reused its ScoreScratch.
inline double kl_scalar_reference(std::span<const float> a, std::span<const float> b,
                                  std::vector<double>& p_a) {
  const size_t n = a.size();
  const double ma = *std::max_element(a.begin(), a.end());
  const double mb = *std::max_element(b.begin(), b.end());
  p_a.resize(n);
  double sa = 0, sb = 0;
  for (size_t i = 0; i < n; ++i) {
    p_a[i] = std::exp(static_cast<double>(a[i]) - ma);
    sa += p_a[i];
    sb += std::exp(static_cast<double>(b[i]) - mb);
  }
  const double lse_a = ma + std::log(sa);
  const double lse_b = mb + std::log(sb);
  double kl = 0;
  for (size_t i = 0; i < n; ++i) {
    kl += (p_a[i] / sa) *
          ((static_cast<double>(a[i]) - lse_a) - (static_cast<double>(b[i]) - lse_b));
  }
  return kl;
}

inline double kl_scalar_reference(std::span<const float> a, std::span<const float> b) {
  std::vector<double> p_a;
  return kl_scalar_reference(a, b, p_a);
}

}  // namespace hd::testing
