// Which chunks the floor is measured on (analysis/floor_sample.h): every chunk of short runs,
// otherwise 1 in 8 and at least 4, in pairs spread over the text so that both floor splits
// (chunk c at split c % 2) get half.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "analysis/floor_sample.h"
#include "errors.h"

using hd::analysis::floor_sample;

TEST(FloorSample, ShortRunsAndAllMeasureEveryChunk) {
  for (int n = 0; n <= 8; ++n) EXPECT_EQ(floor_sample("auto", n).size(), static_cast<size_t>(n));
  EXPECT_EQ(floor_sample("all", 1000).size(), 1000u);
  EXPECT_EQ(floor_sample("50", 20).size(), 20u);  // more than the run has: every chunk
}

TEST(FloorSample, AutoTakesOneInEightAtLeastFourInPairs) {
  EXPECT_EQ(floor_sample("auto", 9), (std::vector<int>{2, 3, 6, 7}));
  EXPECT_EQ(floor_sample("auto", 32), (std::vector<int>{8, 9, 24, 25}));
  EXPECT_EQ(floor_sample("auto", 64).size(), 8u);
  EXPECT_EQ(floor_sample("auto", 1000).size(), 125u);  // ⌈1000 / 8⌉
  EXPECT_EQ(floor_sample("3", 10), (std::vector<int>{2, 3, 6}));
}

// Every run length and count: sorted, distinct, inside the run, as many as asked, both splits
// within one of each other, and no stretch of the text without a sampled chunk longer than two
// of the stretches the sample divides it into.
TEST(FloorSample, SamplesAreSpreadOverTheTextAndBalancedBetweenSplits) {
  for (int n = 1; n <= 300; ++n) {
    for (const std::string choice : {"auto", "1", "2", "5", "8", "17"}) {
      const std::vector<int> s = floor_sample(choice, n);
      const size_t want = choice == "auto" ? (n <= 8 ? n : std::max(4, (n + 7) / 8))
                                           : std::min(n, std::stoi(choice));
      ASSERT_EQ(s.size(), want) << choice << " of " << n;
      EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
      EXPECT_EQ(std::set<int>(s.begin(), s.end()).size(), s.size());
      EXPECT_GE(s.front(), 0);
      EXPECT_LT(s.back(), n);
      const auto odd = std::count_if(s.begin(), s.end(), [](int c) { return c % 2; });
      EXPECT_LE(std::abs(static_cast<long>(s.size()) - 2 * odd), 1) << choice << " of " << n;
      const int stretch = (n + static_cast<int>((s.size() + 1) / 2) - 1) /
                          static_cast<int>((s.size() + 1) / 2);
      int last = -1;
      for (int c : s) {
        EXPECT_LE(c - last, 2 * stretch + 2) << choice << " of " << n << " at " << c;
        last = c;
      }
      EXPECT_LE(n - last, 2 * stretch + 2) << choice << " of " << n;
    }
  }
}

TEST(FloorSample, AnythingElseIsRefused) {
  for (const std::string bad : {"", "0", "-3", "+4", " 4", "4 ", "4x", "some", "ALL", "1e3",
                                "99999999999"}) {
    EXPECT_THROW(floor_sample(bad, 10), hd::InputError) << bad;
  }
}
