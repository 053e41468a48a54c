// Main effects, interactions and Shapley values of a sweep, on hand-computed games.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "analysis/attribution.h"
#include "errors.h"

using hd::analysis::attribute;

TEST(Attribution, AdditiveGameGivesEachSettingItsOwnPart) {
  // v = 1·[x0] + 2·[x1] + 4·[x2]: no interactions, every effect its own coefficient.
  std::vector<double> v(8);
  for (size_t m = 0; m < 8; ++m) v[m] = (m & 1 ? 1.0 : 0) + (m & 2 ? 2.0 : 0) + (m & 4 ? 4.0 : 0);
  const auto a = attribute(v);
  EXPECT_EQ(a.shapley, (std::vector<double>{1, 2, 4}));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.main[i].value, double(1 << i));
  EXPECT_EQ(a.main[0].pairs, 4u);
  EXPECT_EQ(a.interaction[0][1].value, 0.0);
  EXPECT_EQ(a.interaction[1][2].pairs, 2u);
}

TEST(Attribution, ShapleySplitsAnInteractionAndSumsToTheTotal) {
  // v = x0·x1 (only both together matter) + 0.5·x2 + 0.25·x0·x2, with v(0) = 0.125 (a floor).
  std::vector<double> v(8);
  for (size_t m = 0; m < 8; ++m) {
    const double x0 = m & 1, x1 = (m >> 1) & 1, x2 = (m >> 2) & 1;
    v[m] = 0.125 + x0 * x1 + 0.5 * x2 + 0.25 * x0 * x2;
  }
  const auto a = attribute(v);
  // Hand computation: x0·x1 splits 1/2, 1/2; x0·x2 splits 1/8, 1/8; x2 keeps 0.5.
  EXPECT_DOUBLE_EQ(a.shapley[0], 0.5 + 0.125);
  EXPECT_DOUBLE_EQ(a.shapley[1], 0.5);
  EXPECT_DOUBLE_EQ(a.shapley[2], 0.5 + 0.125);
  EXPECT_NEAR(std::accumulate(a.shapley.begin(), a.shapley.end(), 0.0), v[7] - v[0], 1e-15);
  EXPECT_DOUBLE_EQ(a.interaction[0][1].value, 1.0);
  EXPECT_DOUBLE_EQ(a.interaction[0][2].value, 0.25);
  EXPECT_DOUBLE_EQ(a.interaction[1][2].value, 0.0);
  EXPECT_DOUBLE_EQ(a.main[0].value, 0.5 + 0.125);  // (v(1)-v(0) + v(3)-v(2) + ...) / 4
}

TEST(Attribution, NothingToSweepAndMissingCombinations) {
  const auto none = attribute(std::vector<double>{0.0});
  EXPECT_TRUE(none.main.empty() && none.shapley.empty());

  std::vector<double> v = {0, 1, 2, std::nan("")};  // both settings together cannot run
  const auto a = attribute(v);
  EXPECT_TRUE(std::isnan(a.shapley[0]));
  EXPECT_EQ(a.main[0].value, 1.0);  // the one pair that ran
  EXPECT_EQ(a.main[0].pairs, 1u);
  EXPECT_TRUE(std::isnan(a.interaction[0][1].value));
  EXPECT_EQ(a.interaction[0][1].pairs, 0u);
  EXPECT_THROW(attribute(std::vector<double>{0, 1, 2}), hd::InputError);
}

TEST(Attribution, SettingsThatCannotMoveAloneBecomeOnePlayer) {
  // Three settings; bit 1 (V type) cannot be set without bit 2 (flash attention).
  std::vector<bool> possible(8);
  for (unsigned m = 0; m < 8; ++m) possible[m] = !((m & 2) && !(m & 4));
  const auto players = hd::analysis::coupled_players(possible);
  EXPECT_EQ(players, (std::vector<unsigned>{1u, 2u | 4u}));
  std::vector<double> v(8, std::nan(""));
  for (unsigned m = 0; m < 8; ++m) {
    if (possible[m]) v[m] = (m & 1 ? 1.0 : 0) + (m & 4 ? 0.5 : 0) + (m & 2 ? 0.25 : 0);
  }
  const auto game = hd::analysis::player_values(v, players);
  EXPECT_EQ(game, (std::vector<double>{0, 1, 0.75, 1.75}));
  const auto a = attribute(game);
  EXPECT_DOUBLE_EQ(a.shapley[0], 1.0);
  EXPECT_DOUBLE_EQ(a.shapley[1], 0.75);
  // Everything possible: nothing joined.
  EXPECT_EQ(hd::analysis::coupled_players(std::vector<bool>(4, true)),
            (std::vector<unsigned>{1u, 2u}));
}
