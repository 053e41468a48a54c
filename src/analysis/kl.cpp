#include "analysis/kl.h"

#include <cmath>
#include <limits>

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

int32_t top1(std::span<const float> logits) {
  // top_k's own selection (a NaN it keeps in a slot decides what passes it): the same id
  // whatever the logits hold. The probabilities it also computes are five exps.
  return top_k(logits, 0.0).id[0];
}

// KL(row || b) with the row's probabilities p and log-sum-exp lse_a; b's exp terms go to e_b.
// lse_b is b's log-sum-exp, the same number as log_sum_exp(b).
static double kl_from(const double* p, std::span<const float> a, double lse_a,
                      std::span<const float> b, std::vector<double>& e_b, double& lse_b) {
  e_b.resize(b.size());
  const double m = loops().max_of(b.data(), b.size());
  const double s = loops().exp_sum_into(b.data(), b.size(), m, e_b.data());
  lse_b = m + std::log(s);
  const double kl =
      loops().kl_terms(p, a.data(), lse_a, b.data(), lse_b, e_b.data(), 1.0 / s, a.size());
  if (!std::isnan(kl)) return kl;
  // A +inf term (A gives a token mass, B none: a -inf logit) turns the compensated sums' carry
  // into NaN; the KL is then +inf, its true value.
  for (size_t i = 0; i < b.size(); ++i) {
    if (p[i] > 0 && e_b[i] == 0 && b[i] == -std::numeric_limits<float>::infinity())
      return std::numeric_limits<double>::infinity();
  }
  return kl;
}

// KL(A||B) = sum_i pA_i * (log pA_i - log pB_i), and both log-sum-exps on the way.
static double kl_with_lse(std::span<const float> a, std::span<const float> b, ScoreScratch& scratch,
                          double& lse_a, double& lse_b) {
  scratch.p_a.resize(a.size());
  lse_a = softmax_into(a, scratch.p_a.data());
  return kl_from(scratch.p_a.data(), a, lse_a, b, scratch.e_b, lse_b);
}

double kl_divergence(std::span<const float> a, std::span<const float> b, ScoreScratch& scratch) {
  double lse_a = 0, lse_b = 0;
  return kl_with_lse(a, b, scratch, lse_a, lse_b);
}

double nll(std::span<const float> logits, int32_t next) {
  return log_sum_exp(logits) - static_cast<double>(logits[static_cast<size_t>(next)]);
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
  // B's exp terms, one buffer per thread: kl_to is const and may be called from several.
  thread_local std::vector<double> e_b;
  const size_t off = row * vocab_;
  double lse_b = 0;
  return kl_from(p_.data() + off, logits_.subspan(off, vocab_), lse_[row], b, e_b, lse_b);
}

double kl_term(double p, double q) {
  if (p == 0) return q;
  if (q == 0) return std::numeric_limits<double>::infinity();
  const double d = std::log(p) - std::log(q);
  if (std::abs(d) >= 0.25) return p * (d - 1.0) + q;
  double g = 1.0 / 87178291200.0;  // the kernel's series, highest term first
  for (const double c : {-1.0 / 6227020800.0, 1.0 / 479001600.0, -1.0 / 39916800.0,
                         1.0 / 3628800.0, -1.0 / 362880.0, 1.0 / 40320.0, -1.0 / 5040.0,
                         1.0 / 720.0, -1.0 / 120.0, 1.0 / 24.0, -1.0 / 6.0, 0.5}) {
    g = g * d + c;
  }
  return (p * (d * d)) * g;
}

}  // namespace hd::analysis
