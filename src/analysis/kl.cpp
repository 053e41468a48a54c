#include "analysis/kl.h"

#include <cmath>

#include "analysis/kl_kernel.h"

namespace hd::analysis {

// Every loop over the vocabulary below is the kernel's: the same bits from each of its copies.
static const kernel::Kernel& loops() {
  static const kernel::Kernel& k = kernel::best();
  return k;
}

// log p_i = x_i - lse(x); with m = max x:  lse = m + log sum_i exp(x_i - m).
double log_sum_exp(std::span<const float> logits) {
  const double m = loops().max_of(logits.data(), logits.size());
  return m + std::log(loops().exp_sum(logits.data(), logits.size(), m));
}

// p = softmax(x) into p (x's size); returns lse(x), the same number as log_sum_exp(x).
static double softmax_into(std::span<const float> x, double* p) {
  const double m = loops().max_of(x.data(), x.size());
  const double s = loops().exp_sum_into(x.data(), x.size(), m, p);
  for (size_t i = 0; i < x.size(); ++i) p[i] /= s;
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

// KL(A||B) = sum_i pA_i * (log pA_i - log pB_i), and both log-sum-exps on the way.
static double kl_with_lse(std::span<const float> a, std::span<const float> b, ScoreScratch& scratch,
                          double& lse_a, double& lse_b) {
  scratch.p_a.resize(a.size());
  lse_a = softmax_into(a, scratch.p_a.data());
  lse_b = log_sum_exp(b);
  return loops().kl_terms(scratch.p_a.data(), a.data(), lse_a, b.data(), lse_b, a.size());
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

void KlReference::set(std::span<const float> logits, size_t vocab) {
  logits_ = logits;
  vocab_ = vocab;
  const size_t rows = logits.size() / vocab;
  p_.resize(logits.size());  // the same size every chunk: no new memory after the first
  lse_.resize(rows);
  for (size_t r = 0; r < rows; ++r) {
    lse_[r] = softmax_into(logits.subspan(r * vocab, vocab), p_.data() + r * vocab);
  }
}

double KlReference::kl_to(size_t row, std::span<const float> b) const {
  const size_t off = row * vocab_;
  return loops().kl_terms(p_.data() + off, logits_.data() + off, lse_[row], b.data(),
                          log_sum_exp(b), vocab_);
}

}  // namespace hd::analysis
