// KL, NLL and top-k on cases computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "analysis/kl.h"

using hd::analysis::score_position;
using hd::analysis::ScoreScratch;

TEST(Kl, IdenticalLogitsGiveExactlyZero) {
  std::vector<float> a = {1.5f, -2.0f, 0.25f, 3.0f, 3.0f, -7.5f};
  ScoreScratch s;
  const auto r = score_position(a, a, 2, s);
  EXPECT_EQ(r.kl, 0.0);  // exact, not approximately
  EXPECT_EQ(r.nll_a, r.nll_b);
  EXPECT_EQ(r.top_a.id, r.top_b.id);
}

TEST(Kl, ShiftedLogitsAreTheSameDistribution) {
  // log-softmax is invariant to adding a constant; 0.5 is exact in binary, so is the result.
  std::vector<float> a = {0.f, 1.f, 2.f, 3.f};
  std::vector<float> b = {0.5f, 1.5f, 2.5f, 3.5f};
  ScoreScratch s;
  EXPECT_NEAR(score_position(a, b, 0, s).kl, 0.0, 1e-15);
}

TEST(Kl, TwoTokenClosedForm) {
  // A: p = (0.5, 0.5) from logits (0, 0).  B: logits (0, ln 3) -> q = (0.25, 0.75).
  // KL = 0.5 ln(0.5/0.25) + 0.5 ln(0.5/0.75) = 0.5 ln 2 + 0.5 ln(2/3) = 0.5 ln(4/3).
  std::vector<float> a = {0.f, 0.f};
  std::vector<float> b = {0.f, static_cast<float>(std::log(3.0))};
  ScoreScratch s;
  const auto r = score_position(a, b, 1, s);
  EXPECT_NEAR(r.kl, 0.5 * std::log(4.0 / 3.0), 1e-7);
  EXPECT_NEAR(r.nll_a, std::log(2.0), 1e-12);
  EXPECT_NEAR(r.nll_b, -std::log(0.75), 1e-7);
}

TEST(Kl, UniformAgainstPeaked) {
  // A uniform over 4, B puts e^2 weight on token 3: q3 = e^2/(3+e^2), qi = 1/(3+e^2).
  // KL(A||B) = sum 1/4 ln((1/4)/q_i) = ln(1/4) - (1/4)(3 ln q_0 + ln q_3) = ln((3+e^2)/4) - 1/2.
  std::vector<float> a = {0, 0, 0, 0};
  std::vector<float> b = {0, 0, 0, 2};
  ScoreScratch s;
  const double e2 = std::exp(2.0);
  EXPECT_NEAR(score_position(a, b, 0, s).kl, std::log((3 + e2) / 4) - 0.5, 1e-12);
}

TEST(Kl, IsNotSymmetric) {
  std::vector<float> a = {0, 0, 0, 0};
  std::vector<float> b = {0, 0, 0, 2};
  ScoreScratch s;
  EXPECT_NE(score_position(a, b, 0, s).kl, score_position(b, a, 0, s).kl);
}

TEST(Kl, LargeLogitsDoNotOverflow) {
  std::vector<float> a = {1000.f, 999.f, -1000.f};
  std::vector<float> b = {999.f, 1000.f, -1000.f};
  ScoreScratch s;
  const auto r = score_position(a, b, 0, s);
  ASSERT_TRUE(std::isfinite(r.kl));
  // p = (e/(1+e), 1/(1+e)), q swapped: KL = (p0 - p1) * 1 = (e - 1)/(e + 1) = tanh(1/2).
  EXPECT_NEAR(r.kl, std::tanh(0.5), 1e-9);
}

TEST(TopK, OrderedByProbabilityTiesToLowerId) {
  std::vector<float> x = {1.f, 5.f, 3.f, 5.f, -1.f, 4.f, 2.f};
  const double lse = hd::analysis::log_sum_exp(x);
  const auto t = hd::analysis::top_k(x, lse);
  EXPECT_EQ(t.id, (std::array<int32_t, 5>{1, 3, 5, 2, 6}));
  EXPECT_FLOAT_EQ(t.p[0], static_cast<float>(std::exp(5.0 - lse)));
  EXPECT_EQ(t.p[0], t.p[1]);
}

TEST(TopK, FewerTokensThanK) {
  std::vector<float> x = {0.f, 1.f};
  const auto t = hd::analysis::top_k(x, hd::analysis::log_sum_exp(x));
  EXPECT_EQ(t.id[0], 1);
  EXPECT_EQ(t.id[1], 0);
  EXPECT_EQ(t.id[2], -1);
  EXPECT_EQ(t.p[2], 0.0f);
}
