#include "analysis/kl.h"

#include <algorithm>
#include <cmath>

namespace hd::analysis {

static float max_of(std::span<const float> x) { return *std::max_element(x.begin(), x.end()); }

double log_sum_exp(std::span<const float> logits) {
  const double m = max_of(logits);
  double s = 0;
  for (float v : logits) s += std::exp(static_cast<double>(v) - m);
  return m + std::log(s);
}

TopK top_k(std::span<const float> logits, double lse) {
  // Partial selection by value, ties to the lower id (std::max_element's "first" rule).
  std::array<int32_t, kTopK> best;
  best.fill(-1);
  const int32_t n = static_cast<int32_t>(logits.size());
  for (int32_t i = 0; i < n; ++i) {
    const float v = logits[static_cast<size_t>(i)];
    int slot = kTopK;
    while (slot > 0 && (best[static_cast<size_t>(slot - 1)] < 0 ||
                        v > logits[static_cast<size_t>(best[static_cast<size_t>(slot - 1)])])) {
      --slot;
    }
    if (slot == kTopK) continue;
    for (int j = kTopK - 1; j > slot; --j)
      best[static_cast<size_t>(j)] = best[static_cast<size_t>(j - 1)];
    best[static_cast<size_t>(slot)] = i;
  }
  TopK t;
  for (size_t k = 0; k < kTopK; ++k) {
    t.id[k] = best[k];
    t.p[k] = best[k] < 0 ? 0.0f
                         : static_cast<float>(std::exp(
                               static_cast<double>(logits[static_cast<size_t>(best[k])]) - lse));
  }
  return t;
}

// KL(A||B), and both log-sum-exps on the way.
static double kl_with_lse(std::span<const float> a, std::span<const float> b, ScoreScratch& scratch,
                          double& lse_a, double& lse_b) {
  const size_t n = a.size();
  // log p_i = x_i - lse(x); with m = max x:  lse = m + log sum_i exp(x_i - m).
  const double ma = max_of(a);
  const double mb = max_of(b);
  scratch.p_a.resize(n);
  double sa = 0, sb = 0;
  for (size_t i = 0; i < n; ++i) {
    const double ea = std::exp(static_cast<double>(a[i]) - ma);
    scratch.p_a[i] = ea;
    sa += ea;
    sb += std::exp(static_cast<double>(b[i]) - mb);
  }
  lse_a = ma + std::log(sa);
  lse_b = mb + std::log(sb);
  // KL(A||B) = sum_i pA_i * (log pA_i - log pB_i), pA_i = exp(a_i - ma) / sa.
  double kl = 0;
  for (size_t i = 0; i < n; ++i) {
    const double la = static_cast<double>(a[i]) - lse_a;
    const double lb = static_cast<double>(b[i]) - lse_b;
    kl += (scratch.p_a[i] / sa) * (la - lb);
  }
  return kl;
}

double kl_divergence(std::span<const float> a, std::span<const float> b, ScoreScratch& scratch) {
  double lse_a = 0, lse_b = 0;
  return kl_with_lse(a, b, scratch, lse_a, lse_b);
}

PositionScore score_position(std::span<const float> a, std::span<const float> b, int32_t next,
                             ScoreScratch& scratch) {
  double lse_a = 0, lse_b = 0;
  PositionScore s;
  s.kl = kl_with_lse(a, b, scratch, lse_a, lse_b);
  s.nll_a = lse_a - static_cast<double>(a[static_cast<size_t>(next)]);
  s.nll_b = lse_b - static_cast<double>(b[static_cast<size_t>(next)]);
  s.top_a = top_k(a, lse_a);
  s.top_b = top_k(b, lse_b);
  return s;
}

}  // namespace hd::analysis
