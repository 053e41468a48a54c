// The vector KL kernel: every copy this CPU runs gives the same bits, its exp is within an ulp
// of the library's, and its KL is the scalar reference's within 1e-12 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "analysis/kl.h"
#include "analysis/kl_kernel.h"
#include "kl_reference.h"

namespace {

using hd::analysis::kernel::Kernel;
using hd::analysis::kernel::supported;

constexpr size_t kQwenVocab = 151936;

// Logits shaped like a model's: a normal bulk, a few tokens far above it.
std::vector<float> logits_like(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> bulk(0.f, 3.f);
  std::vector<float> x(n);
  for (auto& v : x) v = bulk(g);
  for (size_t k = 0; k < std::min<size_t>(n, 5); ++k) x[(k * 7919) % n] += 15.f;
  return x;
}

// b = a + sigma * noise: a second arm that disagrees by about sigma per logit.
std::vector<float> perturbed(const std::vector<float>& a, float sigma, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> noise(0.f, sigma);
  std::vector<float> b = a;
  for (auto& v : b) v += noise(g);
  return b;
}

TEST(KlKernel, EveryCopyGivesTheSameBits) {
  ASSERT_FALSE(supported().empty());
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{17}, size_t{1000}, kQwenVocab}) {
    const auto a = logits_like(n, 1);
    const auto b = perturbed(a, 0.5f, 2);
    const Kernel& ref = *supported().back();
    const double m = ref.max_of(b.data(), n);
    std::vector<double> p_ref(n), p(n), e_b(n);
    const double s_ref = ref.exp_sum_into(a.data(), n, ref.max_of(a.data(), n), p_ref.data());
    const double s_b = ref.exp_sum_into(b.data(), n, m, e_b.data());
    const double kl_ref =
        ref.kl_terms(p_ref.data(), a.data(), 1.25, b.data(), -0.5, e_b.data(), 1 / s_b, n);
    for (const Kernel* k : supported()) {
      SCOPED_TRACE(std::string(k->name) + " at n=" + std::to_string(n));
      EXPECT_EQ(std::bit_cast<uint32_t>(k->max_of(b.data(), n)),
                std::bit_cast<uint32_t>(static_cast<float>(m)));
      EXPECT_EQ(std::bit_cast<uint64_t>(k->exp_sum(b.data(), n, m)),
                std::bit_cast<uint64_t>(ref.exp_sum(b.data(), n, m)));
      EXPECT_EQ(std::bit_cast<uint64_t>(k->exp_sum_into(a.data(), n, k->max_of(a.data(), n),
                                                        p.data())),
                std::bit_cast<uint64_t>(s_ref));
      EXPECT_EQ(p, p_ref);
      EXPECT_EQ(std::bit_cast<uint64_t>(k->kl_terms(p.data(), a.data(), 1.25, b.data(), -0.5,
                                                    e_b.data(), 1 / s_b, n)),
                std::bit_cast<uint64_t>(kl_ref));
    }
  }
}

TEST(KlKernel, ExpIsWithinAnUlpOfTheLibrarysAndZeroBelowTheNormalRange) {
  std::vector<float> x;
  for (double v = 0; v > -720; v -= 0.0137) x.push_back(static_cast<float>(v));
  x.push_back(-1e30f);
  x.push_back(-0.0f);
  std::vector<double> out(x.size());
  for (const Kernel* k : supported()) {
    SCOPED_TRACE(k->name);
    k->exp_sum_into(x.data(), x.size(), 0.0, out.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::exp(static_cast<double>(x[i]));
      if (x[i] < -708.0f) {
        EXPECT_EQ(out[i], 0.0) << x[i];
        continue;
      }
      const double ulp = std::nextafter(want, 2.0) - want;
      ASSERT_LE(std::abs(out[i] - want), ulp) << "exp(" << x[i] << ")";
    }
  }
}

// KL(A || B) in long double (64-bit mantissa): the exact value, to well under 1e-16 here.
long double kl_exact(std::span<const float> a, std::span<const float> b) {
  const long double ma = *std::max_element(a.begin(), a.end());
  const long double mb = *std::max_element(b.begin(), b.end());
  long double sa = 0, sb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sa += std::exp(static_cast<long double>(a[i]) - ma);
    sb += std::exp(static_cast<long double>(b[i]) - mb);
  }
  const long double lse_a = ma + std::log(sa), lse_b = mb + std::log(sb);
  long double kl = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    kl += std::exp(static_cast<long double>(a[i]) - lse_a) *
          ((static_cast<long double>(a[i]) - lse_a) - (static_cast<long double>(b[i]) - lse_b));
  }
  return kl;
}

TEST(KlKernel, KlIsTheScalarReferencesWithin1e12Relative) {
  hd::analysis::ScoreScratch s;
  // KL from about 0.01 to several nats, at qwen3's vocabulary and at odd sizes. Below that the
  // scalar reference is itself off by more than 1e-12 relative (next test).
  for (float sigma : {0.5f, 1.0f, 4.0f}) {
    for (size_t n : {size_t{5}, size_t{4099}, kQwenVocab}) {
      const auto a = logits_like(n, 3);
      const auto b = perturbed(a, sigma, 4);
      const double want = hd::testing::kl_scalar_reference(a, b);
      const double got = hd::analysis::kl_divergence(a, b, s);
      ASSERT_GT(want, 1e-3);
      EXPECT_LE(std::abs(got - want), 1e-12 * want) << "sigma " << sigma << ", n " << n;
    }
  }
}

// At 152k tokens a plain f64 sum is off by ~1e-14 (sqrt(n) ulps): the scalar reference's error
// at every KL, 1e-8 relative at a KL of 1e-6. The kernel's compensated sums stay within 4e-15
// of the exact value down to a KL of 1e-7.
TEST(KlKernel, KlIsWithin4e15OfTheExactValueAtAnySize) {
  hd::analysis::ScoreScratch s;
  double worst_reference = 0;
  for (float sigma : {0.001f, 0.01f, 0.05f, 0.2f, 1.0f}) {
    for (uint64_t seed : {5, 6}) {
      const auto a = logits_like(kQwenVocab, seed);
      const auto b = perturbed(a, sigma, seed + 10);
      const long double exact = kl_exact(a, b);
      const double got = hd::analysis::kl_divergence(a, b, s);
      EXPECT_LE(std::abs(static_cast<long double>(got) - exact), 4e-15L + 1e-12L * exact)
          << "sigma " << sigma << ", exact " << static_cast<double>(exact);
      worst_reference = std::max(worst_reference,
          static_cast<double>(std::abs(hd::testing::kl_scalar_reference(a, b) - exact)));
    }
  }
  EXPECT_GT(worst_reference, 4e-15);  // the plain sum's error, which the kernel does not have
}

TEST(KlKernel, AReferenceGivesKlDivergencesNumbersBitForBit) {
  const size_t v = 4099, rows = 3;
  std::vector<float> a, b;
  for (size_t r = 0; r < rows; ++r) {
    const auto ar = logits_like(v, 10 + r);
    const auto br = perturbed(ar, 0.3f, 20 + r);
    a.insert(a.end(), ar.begin(), ar.end());
    b.insert(b.end(), br.begin(), br.end());
  }
  hd::analysis::KlReference ref;
  hd::analysis::ScoreScratch s;
  // A as the reference, then B (set() again reuses its memory and must forget A), then A again.
  for (const auto* x : {&a, &b, &a}) {
    const auto* y = x == &a ? &b : &a;
    ref.set(*x, v);
    for (size_t r = 0; r < rows; ++r) {
      const std::span<const float> xr(x->data() + r * v, v), yr(y->data() + r * v, v);
      EXPECT_EQ(std::bit_cast<uint64_t>(ref.kl_to(r, yr)),
                std::bit_cast<uint64_t>(hd::analysis::kl_divergence(xr, yr, s)));
      EXPECT_EQ(ref.kl_to(r, xr), 0.0);  // exactly
    }
  }
}

// Arms that differ by less than the sum's rounding: B = A shifted by a constant (the same
// softmax, KL exactly 0) or A with single ulps changed. The plain sum of p_i d_i came out
// negative for some of these rows (shown below, so that the test shows what it guards); the
// term-wise sum never does, on any copy.
TEST(KlKernel, NoKlIsNegativeWhereTheArmsDifferByLessThanItsRounding) {
  hd::analysis::ScoreScratch s;
  int plain_negative = 0, rows = 0;
  for (size_t n : {size_t{8}, size_t{127}, size_t{4099}, size_t{32000}}) {
    for (uint64_t seed = 0; seed < 12; ++seed) {
      const auto a = logits_like(n, 100 + seed);
      std::vector<float> shifted = a, nudged = a;
      for (auto& v : shifted) v += 0.375f;
      for (size_t i = seed; i < n; i += 97) nudged[i] = std::nextafter(nudged[i], 1e9f);
      for (const auto* b : {&shifted, &nudged}) {
        ++rows;
        const double kl = hd::analysis::kl_divergence(a, *b, s);
        EXPECT_GE(kl, 0.0) << "n " << n << ", seed " << seed;
        EXPECT_LT(kl, 1e-12);
        if (hd::testing::kl_scalar_reference(a, *b) < 0) ++plain_negative;
      }
    }
  }
  EXPECT_GT(plain_negative, 0) << "of " << rows << " rows, the plain sum was never negative";
}

// A token one arm gives no mass (a -inf logit, a masked token): where both give none the term
// is 0, where A gives it mass and B none the KL is +inf, its true value.
TEST(KlKernel, MaskedTokensGiveZeroWhereBothMaskAndInfinityWhereOnlyBDoes) {
  hd::analysis::ScoreScratch s;
  const float inf = std::numeric_limits<float>::infinity();
  auto a = logits_like(1000, 7);
  auto b = perturbed(a, 0.1f, 8);
  for (size_t i = 0; i < a.size(); i += 10) a[i] = b[i] = -inf;  // both mask
  const double both = hd::analysis::kl_divergence(a, b, s);
  EXPECT_TRUE(std::isfinite(both)) << both;
  EXPECT_GT(both, 0.0);
  EXPECT_EQ(hd::analysis::kl_divergence(a, a, s), 0.0);
  b[3] = -inf;  // A's token 3 has mass, B's none
  EXPECT_EQ(hd::analysis::kl_divergence(a, b, s), inf);
  // The other way round costs nothing in KL(A || B): A gives the token no mass.
  EXPECT_TRUE(std::isfinite(hd::analysis::kl_divergence(b, a, s)));
  // The scalar form for short distributions (a router's experts) agrees.
  EXPECT_EQ(hd::analysis::kl_term(0.5, 0.0), inf);
  EXPECT_EQ(hd::analysis::kl_term(0.0, 0.25), 0.25);
  EXPECT_EQ(hd::analysis::kl_term(0.3, 0.3), 0.0);
  EXPECT_GE(hd::analysis::kl_term(0.3, std::nextafter(0.3, 1.0)), 0.0);
  EXPECT_NEAR(hd::analysis::kl_term(0.6, 0.2) + hd::analysis::kl_term(0.4, 0.8),
              0.6 * std::log(3.0) + 0.4 * std::log(0.5), 1e-15);
}

}  // namespace
