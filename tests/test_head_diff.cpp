// Per-head split of an attention output: a synthetic diff with one damaged head.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "analysis/head_diff.h"
#include "errors.h"

TEST(HeadDiff, OneDamagedHeadIsInfinitelyConcentrated) {
  const int rows = 3, heads = 4, dim = 2, channels = heads * dim;
  std::vector<float> ref(rows * channels), cand;
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  cand = ref;
  cand[1 * channels + 2 * dim + 1] += 0.5f;  // head 2, row 1
  cand[2 * channels + 2 * dim + 0] -= 0.25f;
  const auto d = hd::analysis::head_delta(ref, cand, channels, heads);
  EXPECT_EQ(d.max_abs, (std::vector<double>{0, 0, 0.5, 0}));
  EXPECT_EQ(d.worst, 2);
  EXPECT_EQ(d.median, 0.0);
  EXPECT_TRUE(std::isinf(d.concentration));

  // Damage in every head: worst / median of {0.5, 0.125, 0.25, 0.25} = 0.5 / 0.25.
  cand[0 * channels + 0 * dim] += 0.125f;
  cand[0 * channels + 1 * dim] += 0.25f;
  cand[2 * channels + 3 * dim + 1] += 0.25f;
  const auto spread = hd::analysis::head_delta(ref, cand, channels, heads);
  EXPECT_EQ(spread.max_abs, (std::vector<double>{0.125, 0.25, 0.5, 0.25}));
  EXPECT_EQ(spread.median, 0.25);
  EXPECT_EQ(spread.concentration, 2.0);

  const auto none = hd::analysis::head_delta(ref, ref, channels, heads);
  EXPECT_TRUE(std::isnan(none.concentration));  // nothing moved: nothing to concentrate
  EXPECT_THROW(hd::analysis::head_delta(ref, ref, channels, 3), hd::InputError);
}
