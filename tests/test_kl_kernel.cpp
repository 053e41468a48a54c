// The vector KL kernel: every copy this CPU runs gives the same bits, its exp is within an ulp
// of the library's, and its KL is the scalar reference's within 1e-12 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
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
    std::vector<double> p_ref(n), p(n);
    const double s_ref = ref.exp_sum_into(a.data(), n, ref.max_of(a.data(), n), p_ref.data());
    const double kl_ref = ref.kl_terms(p_ref.data(), a.data(), 1.25, b.data(), -0.5, n);
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
      EXPECT_EQ(std::bit_cast<uint64_t>(k->kl_terms(p.data(), a.data(), 1.25, b.data(), -0.5, n)),
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

}  // namespace
