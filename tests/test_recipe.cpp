// analysis/recipe: the tensor groups and their patterns, the exact allocation against brute
// force, and Spearman's rank correlation on hand-computed cases.
#include "analysis/recipe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <regex>

using hd::analysis::Allocation;
using hd::analysis::GroupChoices;

namespace {

const std::vector<std::string> kNames = {
    "token_embd.weight",      "blk.0.attn_q.weight",   "blk.0.ffn_down.weight",
    "blk.1.attn_q.weight",    "blk.1.ffn_down.weight", "blk.11.ffn_down.weight",
    "blk.1.ffn_down_exps.weight", "output.weight"};

TEST(RecipeGroups, OneGroupPerClassAndLayerEachPatternMatchingItsOwnTensorsOnly) {
  const auto groups = hd::analysis::tensor_groups(kNames, 1);
  ASSERT_EQ(groups.size(), kNames.size());
  EXPECT_EQ(groups[0].name, "token_embd");
  EXPECT_EQ(groups[4].name, "blk.1.ffn_down");
  EXPECT_EQ(groups[4].pattern, R"(^blk\.1\.ffn_down\.weight$)");
  for (const auto& g : groups) {
    const std::regex re(g.pattern);
    for (const auto& n : kNames) {
      const bool member = std::find(g.tensors.begin(), g.tensors.end(), n) != g.tensors.end();
      // llama-quantize applies a pattern with regex_search: a match anywhere counts.
      EXPECT_EQ(std::regex_search(n, re), member) << g.pattern << " on " << n;
    }
  }
}

TEST(RecipeGroups, LayerRangesJoinOneClassAcrossLayers) {
  const auto groups = hd::analysis::tensor_groups(kNames, 4);
  std::vector<std::string> names;
  for (const auto& g : groups) names.push_back(g.name);
  EXPECT_EQ(names, (std::vector<std::string>{"token_embd", "blk.0-1.attn_q", "blk.0-1.ffn_down",
                                             "blk.11.ffn_down", "blk.1.ffn_down_exps", "output"}));
  const std::regex re(groups[2].pattern);
  EXPECT_TRUE(std::regex_search(std::string("blk.0.ffn_down.weight"), re));
  EXPECT_TRUE(std::regex_search(std::string("blk.1.ffn_down.weight"), re));
  EXPECT_FALSE(std::regex_search(std::string("blk.11.ffn_down.weight"), re));
  EXPECT_FALSE(std::regex_search(std::string("blk.1.ffn_down_exps.weight"), re));
}

// Every combination, for the true optimum.
Allocation brute_force(const std::vector<GroupChoices>& g, uint64_t budget, double max_delta,
                       bool by_bytes) {
  Allocation best;
  std::vector<size_t> pick(g.size(), 0);
  while (true) {
    uint64_t bytes = 0;
    double delta = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      bytes += g[i].options[pick[i]].bytes;
      delta += g[i].options[pick[i]].delta_kl;
    }
    const bool ok = by_bytes ? bytes <= budget : delta <= max_delta + 1e-9;
    const bool better = by_bytes ? delta < best.delta_kl : bytes < best.bytes;
    if (ok && (!best.feasible || better)) best = {true, pick, bytes, delta};
    size_t i = 0;
    while (i < g.size() && ++pick[i] == g[i].options.size()) pick[i++] = 0;
    if (i == g.size()) break;
  }
  return best;
}

std::vector<GroupChoices> random_groups(std::mt19937& rng, size_t n) {
  std::vector<GroupChoices> g(n);
  std::uniform_int_distribution<uint64_t> bytes(1000, 9000);
  std::normal_distribution<double> delta(0.0, 1.0);
  for (auto& x : g) {
    x.options.push_back({"base", bytes(rng), 0.0});
    for (int t = 0; t < 3; ++t) x.options.push_back({"t", bytes(rng), delta(rng)});
  }
  return g;
}

TEST(RecipeAllocation, MatchesBruteForceWithinBytesAndWithinKl) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const auto g = random_groups(rng, 5);
    const uint64_t lo = hd::analysis::smallest_bytes(g), hi = hd::analysis::largest_bytes(g);
    const uint64_t budget = lo + (hi - lo) * static_cast<uint64_t>(trial % 10) / 10;
    const Allocation a = hd::analysis::allocate_within_bytes(g, budget);
    const Allocation b = brute_force(g, budget, 0, true);
    ASSERT_TRUE(a.feasible);
    EXPECT_LE(a.bytes, budget);
    // Byte units here are 1 (spans under 32768): the DP is the optimum itself.
    EXPECT_NEAR(a.delta_kl, b.delta_kl, 1e-12) << "trial " << trial;  // summed in another order
    const double target = hd::analysis::least_delta(g) + 0.3 * (trial % 7);
    const Allocation c = hd::analysis::allocate_within_kl(g, target);
    const Allocation d = brute_force(g, 0, target, false);
    ASSERT_TRUE(c.feasible);
    EXPECT_LE(c.delta_kl, target + 1e-9);
    EXPECT_EQ(c.bytes, d.bytes) << "trial " << trial;
  }
}

TEST(RecipeAllocation, NeverExceedsTheBudgetWhenBytesAreCountedInUnits) {
  std::mt19937 rng(3);
  std::vector<GroupChoices> g = random_groups(rng, 40);
  for (auto& x : g)
    for (auto& o : x.options) o.bytes *= 1000003;  // spans far above 32768 units
  const uint64_t lo = hd::analysis::smallest_bytes(g), hi = hd::analysis::largest_bytes(g);
  for (int k = 0; k <= 10; ++k) {
    const uint64_t budget = lo + (hi - lo) / 10 * static_cast<uint64_t>(k);
    const Allocation a = hd::analysis::allocate_within_bytes(g, budget);
    ASSERT_TRUE(a.feasible);
    EXPECT_LE(a.bytes, budget);
  }
  EXPECT_FALSE(hd::analysis::allocate_within_bytes(g, lo - 1).feasible);
  EXPECT_FALSE(hd::analysis::allocate_within_kl(g, hd::analysis::least_delta(g) - 1e-9).feasible);
}

TEST(RecipeSpearman, HandComputedCases) {
  EXPECT_DOUBLE_EQ(hd::analysis::spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(hd::analysis::spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // ranks x: 1 2 3 4 5, y: 2 1 4 3 5: 1 - 6 * 4 / (5 * 24) = 0.8
  EXPECT_NEAR(hd::analysis::spearman({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5}), 0.8, 1e-12);
  // a tie takes the mean rank: y ranks 1.5 1.5 3 -> Pearson on ranks
  EXPECT_NEAR(hd::analysis::spearman({1, 2, 3}, {5, 5, 7}), std::sqrt(3.0) / 2, 1e-12);
  EXPECT_TRUE(std::isnan(hd::analysis::spearman({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(hd::analysis::spearman({1}, {1})));
}

}  // namespace
