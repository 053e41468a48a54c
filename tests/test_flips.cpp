// The version report's analysis on hand-made chunks with known answers.
#include <gtest/gtest.h>

#include "analysis/flips.h"

using namespace hd::analysis;

namespace {

PositionRow row(int pos, int32_t top_a, int32_t top_b, float p1, float p2, double kl) {
  PositionRow r;
  r.pos = pos;
  r.target = 7;
  r.scored = true;
  r.score.kl = kl;
  r.score.top_a.id = {top_a, 99, 98, 97, 96};
  r.score.top_a.p = {p1, p2, 0, 0, 0};
  r.score.top_b.id = {top_b, 99, 98, 97, 96};
  return r;
}

}  // namespace

TEST(Flips, CountsMarginsLayersAndTheRestorePointThatRemovesMost) {
  ChunkResult c;
  c.chunk = 3;
  c.diff.positions = {row(1, 5, 5, 0.9f, 0.05f, 0.01), row(2, 5, 6, 0.40f, 0.38f, 0.2),
                      row(3, 5, 5, 0.6f, 0.2f, 0.02), row(4, 1, 2, 0.30f, 0.29f, 0.4)};
  c.diff.positions.push_back(row(5, 1, 2, 0.5f, 0.1f, 9.0));
  c.diff.positions.back().scored = false;  // not scored: never a flip
  // Layer 0: flipped positions 2 and 4 at 0.1, others 0.05; layer 1: 0.5 vs 0.1.
  for (int layer = 0; layer < 2; ++layer) {
    for (int pos = 1; pos <= 4; ++pos) {
      const bool flipped = pos == 2 || pos == 4;
      c.diff.layers.push_back({layer, pos, {flipped ? (layer == 0 ? 0.1 : 0.5) : 0.05, 1, 0}});
    }
  }
  Transplants t;
  t.points = {"inp_embd", "l_out-0", "l_out-1"};
  for (int pos : {2, 4}) {
    t.denoise.push_back({1, pos, 0.3});   // inp_embd: nothing removed yet
    t.denoise.push_back({2, pos, 0.25});  // l_out-0
    t.denoise.push_back({3, pos, 0.0});   // l_out-1 removes most
  }
  t.denoise.push_back({2, 1, 123.0});  // an unflipped position never counts
  c.transplants = t;

  const FlipReport r = flip_report({c});
  EXPECT_EQ(r.n_scored, 4);
  ASSERT_EQ(r.flips.size(), 2u);
  EXPECT_EQ(r.flips[0].pos, 2);
  EXPECT_EQ(r.flips[0].chunk, 3);
  EXPECT_EQ(r.flips[0].top_a, 5);
  EXPECT_EQ(r.flips[0].top_b, 6);
  EXPECT_NEAR(r.flips[0].margin_a, 0.02, 1e-6);
  EXPECT_NEAR(r.median_margin_flipped, (0.02 + 0.01) / 2, 1e-6);
  EXPECT_NEAR(r.median_margin_all, (0.02 + 0.4) / 2, 1e-6);  // 0.01, 0.02, 0.4, 0.85
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_DOUBLE_EQ(r.layers[0].rel_err_flipped, 0.1);
  EXPECT_DOUBLE_EQ(r.layers[0].rel_err_other, 0.05);
  EXPECT_DOUBLE_EQ(r.layers[1].rel_err_flipped, 0.5);
  EXPECT_EQ(r.grows_most_at, 1);  // +0.4 at layer 1 against +0.1 at layer 0
  ASSERT_EQ(r.denoise.size(), 4u);
  EXPECT_EQ(r.denoise[0].point, "none");
  EXPECT_DOUBLE_EQ(r.denoise[0].kl_flipped, (0.2 + 0.4) / 2);
  EXPECT_DOUBLE_EQ(r.denoise[2].kl_flipped, 0.25);
  EXPECT_EQ(r.carried_most_by, "l_out-1");
}

TEST(Flips, NoFlipsIsAnEmptyReportNotAnError) {
  ChunkResult c;
  c.diff.positions = {row(1, 5, 5, 0.9f, 0.05f, 0.01)};
  const FlipReport r = flip_report({c});
  EXPECT_EQ(r.n_scored, 1);
  EXPECT_TRUE(r.flips.empty());
  EXPECT_TRUE(r.layers.empty());
  EXPECT_EQ(r.grows_most_at, -1);
}
