// Intervals and percentiles on hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "analysis/against_floor.h"
#include "analysis/residual.h"
#include "analysis/stats.h"
#include "analysis/summary.h"

using namespace hd::analysis;

TEST(Stats, StudentTQuantilesMatchTables) {
  EXPECT_NEAR(t_quantile_975(1), 12.7062, 1e-4);
  EXPECT_NEAR(t_quantile_975(2), 4.3027, 1e-4);
  EXPECT_NEAR(t_quantile_975(5), 2.5706, 1e-4);
  EXPECT_NEAR(t_quantile_975(10), 2.2281, 1e-4);
  EXPECT_NEAR(t_quantile_975(30), 2.0423, 1e-4);
  EXPECT_NEAR(t_quantile_975(1e6), 1.95996, 1e-4);
}

TEST(Stats, ClusterMeanByHand) {
  // Clusters: {1, 3} and {5, 7}, mean 4. Residual totals e_1 = -4, e_2 = 4.
  // Var = G/(G-1) * (16 + 16) / N^2 = 2 * 32 / 16 = 4, SE = 2, t(1) = 12.7062.
  std::vector<double> v = {1, 3, 5, 7};
  std::vector<int> c = {0, 0, 1, 1};
  const MeanCI m = cluster_mean(v, c);
  EXPECT_DOUBLE_EQ(m.mean, 4.0);
  EXPECT_EQ(m.clusters, 2u);
  EXPECT_NEAR(m.ci95, 2.0 * 12.7062047, 1e-5);
}

TEST(Stats, ClustersWiderThanIidWhenTokensCorrelate) {
  // Equal values inside each cluster: N = 6, G = 3. CR1 var = 3/2 * sum e_g^2 / 36.
  std::vector<double> v = {0, 0, 1, 1, 2, 2};
  std::vector<int> c = {0, 0, 1, 1, 2, 2};
  const MeanCI m = cluster_mean(v, c);
  const double var = 1.5 * (4.0 + 0.0 + 4.0) / 36.0;
  EXPECT_NEAR(m.ci95, t_quantile_975(2) * std::sqrt(var), 1e-12);
}

TEST(Stats, OneClusterHasNoInterval) {
  std::vector<double> v = {1, 2};
  std::vector<int> c = {0, 0};
  const MeanCI m = cluster_mean(v, c);
  EXPECT_DOUBLE_EQ(m.mean, 1.5);
  EXPECT_TRUE(std::isnan(m.ci95));
}

TEST(Stats, ZeroValuesHaveZeroWidth) {
  std::vector<double> v(10, 0.0);
  std::vector<int> c = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4};
  const MeanCI m = cluster_mean(v, c);
  EXPECT_EQ(m.mean, 0.0);
  EXPECT_EQ(m.ci95, 0.0);
}

// A rate's interval stays inside [0, 1]: the t-interval on a rare event crossed 0 (routing
// printed "3e-16 ± 1.109"); no variation and one chunk say so instead of giving NaN.
TEST(Stats, RateIntervalsStayInsideZeroAndOne) {
  // Rare events: 2 of 400 positions over 4 chunks, both in one chunk.
  std::vector<double> rare(400, 0.0);
  std::vector<int> chunk(400);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<int>(i / 100);
  rare[10] = rare[20] = 1;
  const MeanCI symmetric = cluster_mean(rare, chunk);
  EXPECT_LT(symmetric.mean - symmetric.ci95, 0.0) << "the symmetric interval crosses 0 here";
  const RateCI r = cluster_rate(rare, chunk);
  ASSERT_TRUE(r.has_interval());
  EXPECT_DOUBLE_EQ(r.rate, 0.005);
  EXPECT_EQ(r.hits, 2.0);
  EXPECT_GE(r.lo, 0.0);
  EXPECT_LE(r.lo, r.rate);
  EXPECT_GE(r.hi, r.rate);
  EXPECT_LE(r.hi, 1.0);
  // The same near 1.
  std::vector<double> common(400, 1.0);
  common[5] = 0;
  const RateCI c = cluster_rate(common, chunk);
  ASSERT_TRUE(c.has_interval());
  EXPECT_LE(c.hi, 1.0);
  EXPECT_GE(c.lo, 0.0);
  EXPECT_LT(c.lo, c.rate);
  // Wilson at n_eff = n (independent values, equal rate in every chunk): the textbook case,
  // 50 of 100 with t(3) = 3.182.
  std::vector<double> half(100);
  std::vector<int> four(100);
  for (size_t i = 0; i < half.size(); ++i) {
    half[i] = i % 2 ? 1.0 : 0.0;
    four[i] = static_cast<int>(i / 25) ;
  }
  half[48] = 1, half[49] = 0;  // 25 values a chunk: 12 or 13 ones, nearly equal rates
  const RateCI w = cluster_rate(half, four);
  ASSERT_TRUE(w.has_interval());
  EXPECT_NEAR(w.lo + w.hi, 1.0, 0.02);
  EXPECT_GT(w.hi - w.lo, 0.25);  // t(3) is wider than 1.96: the interval says there are 4 chunks
  EXPECT_LT(w.hi - w.lo, 0.35);
  // Nothing happened, or everything: no interval, and why.
  const RateCI none = cluster_rate(std::vector<double>(400, 0.0), chunk);
  EXPECT_FALSE(none.has_interval());
  EXPECT_EQ(none.why, RateCI::Why::kNoVariation);
  EXPECT_EQ(none.rate, 0.0);
  EXPECT_EQ(none.n, 400u);
  EXPECT_EQ(cluster_rate(std::vector<double>(400, 1.0), chunk).why, RateCI::Why::kNoVariation);
  // One chunk: a rate, no interval.
  std::vector<double> one = {0, 1, 1, 0};
  const RateCI single = cluster_rate(one, std::vector<int>(4, 0));
  EXPECT_EQ(single.why, RateCI::Why::kOneChunk);
  EXPECT_DOUBLE_EQ(single.rate, 0.5);
  EXPECT_TRUE(std::isnan(single.lo));
  EXPECT_EQ(cluster_rate({}, {}).why, RateCI::Why::kNone);
}

TEST(Stats, PercentilesInterpolateAsThePeer) {
  std::vector<double> v = {4, 0, 3, 1, 2};  // sorted 0..4, p = f * 4
  const auto p = kl_percentiles(v);
  EXPECT_EQ(p.front().value, 4.0);        // max
  EXPECT_EQ(p.back().value, 0.0);         // min
  EXPECT_DOUBLE_EQ(p[5].value, 2.0);      // median
  EXPECT_NEAR(p[1].value, 3.996, 1e-12);  // 99.9 %: 0.999 * 4 = 3.996
  EXPECT_NEAR(p[6].value, 0.4, 1e-12);    // 10 %
}

TEST(Residual, ByHand) {
  std::vector<float> a = {3, 4};
  std::vector<float> b = {3, 5};
  const auto r = residual_diff(a, b);
  EXPECT_DOUBLE_EQ(r.rel_err, 1.0 / 5.0);
  EXPECT_DOUBLE_EQ(r.max_abs, 1.0);
  EXPECT_NEAR(r.cosine, (9.0 + 20.0) / (5.0 * std::sqrt(34.0)), 1e-15);
}

TEST(Residual, IdenticalRowsAreExact) {
  std::vector<float> a = {0.1f, -2.f, 7.25f};
  const auto r = residual_diff(a, a);
  EXPECT_EQ(r.rel_err, 0.0);
  EXPECT_EQ(r.cosine, 1.0);
  EXPECT_EQ(r.max_abs, 0.0);
}

// The two statements of analysis/against_floor.h are separate: an interval can reach 0 above a
// floor of 0, and a value can sit on a floor without its interval reaching 0.
TEST(AgainstFloor, TwoStatementsNeverOne) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const MeanCI crosses_zero{0.5, 0.8, 100, 4};
  const MeanCI clear{1.0, 0.1, 100, 8};
  // A floor of exactly 0 (bitwise) puts nothing below it.
  EXPECT_TRUE(standing(crosses_zero, 0).includes_zero);
  EXPECT_FALSE(standing(crosses_zero, 0).below_floor);
  EXPECT_EQ(standing_text(standing(crosses_zero, 0)), "interval includes 0");
  // Above the floor's upper end: the ratio to the floor, never a blank.
  EXPECT_EQ(standing_text(standing(clear, 0.5)), "2× floor");
  EXPECT_EQ(standing_text(standing(clear, 0.5, 0.032)), "31× floor");
  // A floor of exactly 0 and a value that is not: said, never a ratio to 0.
  EXPECT_EQ(standing_text(standing(clear, 0)), "above a zero floor");
  EXPECT_EQ(standing_text(standing({0.0, 0.0, 100, 8}, 0)), "interval includes 0");
  // Down to the floor but not to 0.
  const Standing on_floor = standing(clear, 0.95);
  EXPECT_FALSE(on_floor.includes_zero);
  EXPECT_TRUE(on_floor.below_floor);
  EXPECT_EQ(standing_text(on_floor), "within the floor; 1.1× floor");
  EXPECT_EQ(standing_text(standing(crosses_zero, 0.2, 0.1)),
            "interval includes 0; within the floor; 5× floor");
  // Negative values (a component step) are read by their size; no floor, no floor statement.
  EXPECT_TRUE(standing({-1.0, 0.1, 10, 8}, 0.95).below_floor);
  EXPECT_FALSE(standing(clear, nan).below_floor);
  // One chunk: no interval, the mean alone against the floor, never "includes 0".
  EXPECT_FALSE(standing({0.0, nan, 10, 1}, 0).includes_zero);
  EXPECT_TRUE(standing({0.3, nan, 10, 1}, 0.5).below_floor);
  EXPECT_DOUBLE_EQ(upper_end({0.2, 0.05, 1, 2}), 0.25);
  EXPECT_DOUBLE_EQ(upper_end({0.2, nan, 1, 1}), 0.2);
}

TEST(AgainstFloor, RatioIsWordedOnce) {
  EXPECT_EQ(ratio_text(31.4), "31× floor");
  EXPECT_EQ(ratio_text(1.5), "1.5× floor");
  EXPECT_EQ(ratio_text(0.42), "0.42× floor");
  EXPECT_EQ(ratio_text(2.5e7), "2.5e+07× floor");
  EXPECT_EQ(ratio_text(0), "");
  EXPECT_EQ(ratio_text(std::numeric_limits<double>::infinity()), "");
  EXPECT_EQ(ratio_text(std::numeric_limits<double>::quiet_NaN()), "");
}

TEST(AgainstFloor, FewChunksAreFlagged) {
  EXPECT_EQ(few_chunks_note(2), "2 chunks: intervals are wide");
  EXPECT_EQ(few_chunks_note(4), "4 chunks: intervals are wide");
  EXPECT_EQ(few_chunks_note(1), "1 chunk: no intervals");
  EXPECT_EQ(few_chunks_note(5), "");
}

// KL +inf at a position (B masks a token A gives mass): counted, the first one named by its
// chunk and position, and left out of the mean and percentiles, which stay finite (issue 40).
TEST(Summary, InfiniteKlPositionsAreCountedAndLeftOutOfTheMeans) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<ChunkResult> chunks(2);
  for (int c = 0; c < 2; ++c) {
    chunks[static_cast<size_t>(c)].chunk = 10 + c;
    for (int p = 0; p < 4; ++p) {
      PositionRow r;
      r.pos = p;
      r.scored = true;
      r.score.kl = 0.01 * (p + 1);
      r.score.nll_a = r.score.nll_b = 1.0;
      chunks[static_cast<size_t>(c)].diff.positions.push_back(r);
    }
  }
  chunks[1].diff.positions[2].score.kl = inf;
  chunks[1].diff.positions[3].score.kl = inf;
  chunks[0].diff.positions[0].score.nll_b = inf;
  const Summary s = summarize(chunks);
  EXPECT_EQ(s.diff.n_scored, 8u);
  EXPECT_EQ(s.diff.n_kl_infinite, 2u);
  EXPECT_EQ(s.diff.first_infinite_chunk, 11);
  EXPECT_EQ(s.diff.first_infinite_pos, 2);
  EXPECT_DOUBLE_EQ(s.diff.kl.mean, (0.01 + 0.02 + 0.03 + 0.04 + 0.01 + 0.02) / 6);
  EXPECT_TRUE(std::isfinite(s.diff.kl.ci95));
  for (const auto& p : s.diff.kl_percentiles) EXPECT_TRUE(std::isfinite(p.value)) << p.label;
  EXPECT_EQ(s.diff.n_nll_infinite, 1u);
  EXPECT_DOUBLE_EQ(s.diff.ppl_b, std::exp(1.0));
  const std::string note = infinite_kl_note(s.diff);
  EXPECT_NE(note.find("+inf at 2 of 8 positions (first: chunk 11 position 2)"), std::string::npos)
      << note;
  EXPECT_NE(note.find("at 1 position, which the PPLs leave out"), std::string::npos) << note;
  EXPECT_EQ(infinite_kl_note(summarize({chunks[0]}).diff).find("KL is +inf"), std::string::npos);
}

// The floor on two splits, chunk c at split c % 2: each split summarized over its chunks, the
// floor the larger of all, and a split that is bitwise where the other is not said so (issue 40:
// one split alone can understate the noise by 10^4).
TEST(Summary, TwoSplitFloorsAreEachSummarizedAndTheLargerIsTheFloor) {
  std::vector<ChunkResult> chunks(4);
  for (int c = 0; c < 4; ++c) {
    ChunkResult& r = chunks[static_cast<size_t>(c)];
    r.chunk = c;
    r.floor = Comparison{};
    r.floor_b = Comparison{};
    for (int p = 0; p < 3; ++p) {
      PositionRow row;
      row.pos = p;
      row.scored = true;
      row.score.kl = 0.1;
      r.diff.positions.push_back(row);
      row.score.kl = 0;  // A vs A′: bitwise on both splits
      r.floor->positions.push_back(row);
      row.score.kl = c % 2 == 1 ? 1e-4 * (p + 1) : 0;  // B vs B′: only the second split moves
      r.floor_b->positions.push_back(row);
    }
  }
  const Summary one = summarize(chunks);
  EXPECT_TRUE(one.splits.empty());
  const Summary two = summarize(chunks, true);
  ASSERT_EQ(two.splits.size(), 2u);
  EXPECT_EQ(two.splits[0].kl, 0.0);
  EXPECT_DOUBLE_EQ(two.splits[1].kl, 2e-4);
  EXPECT_EQ(two.splits[1].b.n_scored, 6u);  // chunks 1 and 3
  EXPECT_TRUE(std::isinf(two.split_ratio));
  EXPECT_DOUBLE_EQ(two.noise.kl.mean, 2e-4);  // the second split's B, over its own chunks
  EXPECT_DOUBLE_EQ(one.noise.kl.mean, 1e-4);  // pooled: half of it
  EXPECT_FALSE(two.noise.bitwise_identical);
  // One chunk (or a part of a sharded run holding one parity): that split alone, named, and the
  // floor pooled, which is that split's.
  const Summary odd = summarize({chunks[1], chunks[3]}, true);
  ASSERT_EQ(odd.splits.size(), 1u);
  EXPECT_EQ(odd.splits[0].split, 1);
  EXPECT_FALSE(odd.splits_read_alone);
  EXPECT_TRUE(std::isnan(odd.split_ratio));
  EXPECT_DOUBLE_EQ(odd.noise.kl.mean, 2e-4);
  EXPECT_TRUE(two.splits_read_alone);
}
