// Scores one position from two arms' raw logits over the full vocabulary, in f64.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace hd::analysis {

inline constexpr int kTopK = 5;

struct TopK {
  std::array<int32_t, kTopK> id{};
  std::array<float, kTopK> p{};  // probabilities, rounded to f32 for storage
};

struct PositionScore {
  double kl = 0;     // KL(A || B) = sum_i pA_i (log pA_i - log pB_i), natural log
  double nll_a = 0;  // -log pA(next token)
  double nll_b = 0;
  TopK top_a;  // top_a.id[0] is A's top-1 (lowest id among ties, as llama-perplexity)
  TopK top_b;
};

// Scratch space reused across positions so scoring allocates nothing per call.
struct ScoreScratch {
  std::vector<double> p_a;
  std::vector<double> e_b;
};

// One arm's rows of logits with their probabilities and log-sum-exps, computed once: KL(row ||
// b) then costs only b's max, b's exponentials and the KL sum, for the many patched passes
// scored against the same arm. The numbers are kl_divergence's, bit for bit. Holds p in f64
// (8 bytes per row and token); set() reuses that memory from one chunk to the next.
class KlReference {
 public:
  // logits: rows × vocab, read again by kl_to: it must stay as it is until the next set().
  void set(std::span<const float> logits, size_t vocab);
  double kl_to(size_t row, std::span<const float> b) const;

 private:
  std::span<const float> logits_;
  size_t vocab_ = 0;
  std::vector<double> p_;
  std::vector<double> lse_;
};

// One term of a KL over probabilities p of A and q of B (a router's experts, any short
// distribution): p log(p/q) - p + q, >= 0 as computed (the kernel's form, kl_kernel.h); summed
// over a distribution's entries, KL(p || q). p = 0 gives q; q = 0 < p gives +inf.
double kl_term(double p, double q);

// log-sum-exp of x, computed as max + log(sum exp(x - max)).
double log_sum_exp(std::span<const float> logits);

// -log p(next) of one arm's raw logits: log_sum_exp(logits) - logits[next] (+inf where the
// token is masked with -inf).
double nll(std::span<const float> logits, int32_t next);

TopK top_k(std::span<const float> logits, double lse);

// top_k(logits, lse).id[0]: the lowest id among the largest logits (top_k's rule, NaNs too).
int32_t top1(std::span<const float> logits);

// KL(A || B) alone, for the many patched passes where nothing else is needed.
double kl_divergence(std::span<const float> logits_a, std::span<const float> logits_b,
                     ScoreScratch& scratch);

// Scores logits_a vs logits_b (same length) for the actual next token `next`.
// Identical inputs give exactly 0: both log-softmaxes are then bitwise equal.
PositionScore score_position(std::span<const float> logits_a, std::span<const float> logits_b,
                             int32_t next, ScoreScratch& scratch);

}  // namespace hd::analysis
