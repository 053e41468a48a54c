// compare_routes (analysis/routing.h) on routes whose answers are known, and the routing
// analyses' summaries of rows made by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "analysis/routing.h"

using namespace hd::analysis;

namespace {

struct Owned {
  std::vector<float> probs, experts, weights;
  Route route() const { return {probs, experts, weights}; }
};

// Four experts, two used, chosen by probability; weights normalized over the two.
Owned softmax_route(std::vector<float> probs) {
  Owned o{probs, {}, {}};
  std::vector<int> order = {0, 1, 2, 3};
  std::sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });
  const float sum = probs[order[0]] + probs[order[1]];
  for (int i = 0; i < 2; ++i) {
    o.experts.push_back(static_cast<float>(order[i]));
    o.weights.push_back(probs[order[i]] / sum);
  }
  return o;
}

}  // namespace

TEST(Routing, TheSameRouteChangesNothing) {
  const Owned a = softmax_route({0.4f, 0.3f, 0.2f, 0.1f});
  const RouteChange c = compare_routes(a.route(), a.route());
  EXPECT_FALSE(c.set_changed);
  EXPECT_FALSE(c.top1_changed);
  EXPECT_EQ(c.jaccard, 1.0);
  EXPECT_EQ(c.router_kl, 0.0);
  EXPECT_EQ(c.weight_moved, 0.0);
  EXPECT_NEAR(c.margin_a, 0.3 - 0.2, 1e-7);
}

TEST(Routing, KnownChanges) {
  const Owned a = softmax_route({0.4f, 0.3f, 0.2f, 0.1f});  // {0, 1}, weights 4/7, 3/7
  // The same set, the best swapped: the set stands, top-1 changes, weights move.
  const Owned swapped = softmax_route({0.3f, 0.4f, 0.2f, 0.1f});
  RouteChange c = compare_routes(a.route(), swapped.route());
  EXPECT_FALSE(c.set_changed);
  EXPECT_TRUE(c.top1_changed);
  EXPECT_EQ(c.jaccard, 1.0);
  EXPECT_NEAR(c.weight_moved, 1.0 / 7, 1e-7);  // (|4/7 - 3/7| + |3/7 - 4/7|) / 2
  const double kl = 0.4 * std::log(0.4 / 0.3) + 0.3 * std::log(0.3 / 0.4);
  EXPECT_NEAR(c.router_kl, kl, 1e-7);
  // One expert replaced: {0, 2}; Jaccard 1/3.
  const Owned one = softmax_route({0.4f, 0.2f, 0.3f, 0.1f});
  c = compare_routes(a.route(), one.route());
  EXPECT_TRUE(c.set_changed);
  EXPECT_FALSE(c.top1_changed);
  EXPECT_NEAR(c.jaccard, 1.0 / 3, 1e-12);
  EXPECT_NEAR(c.weight_moved, 3.0 / 7, 1e-7);  // expert 1's 3/7 goes to expert 2
  // No expert shared: all of the weight moves.
  const Owned other = softmax_route({0.1f, 0.2f, 0.4f, 0.3f});
  c = compare_routes(a.route(), other.route());
  EXPECT_EQ(c.jaccard, 0.0);
  EXPECT_NEAR(c.weight_moved, 1.0, 1e-7);
}

TEST(Routing, SigmoidProbabilitiesAreNormalizedForTheKl) {
  // A sigmoid router's probabilities need not sum to 1: scaled alike, they are the same router.
  Owned a = softmax_route({0.4f, 0.3f, 0.2f, 0.1f});
  Owned b = a;
  for (float& p : b.probs) p *= 2;
  EXPECT_NEAR(compare_routes(a.route(), b.route()).router_kl, 0.0, 1e-7);
}

TEST(Routing, EveryExpertChosenHasNoMargin) {
  const Owned a{{0.5f, 0.5f}, {0, 1}, {0.5f, 0.5f}};
  EXPECT_TRUE(std::isnan(compare_routes(a.route(), a.route()).margin_a));
}

TEST(Routing, BadRoutesAreRefused) {
  const Owned a = softmax_route({0.4f, 0.3f, 0.2f, 0.1f});
  Owned bad = a;
  bad.experts[1] = 4;  // no such expert
  EXPECT_THROW(compare_routes(a.route(), bad.route()), std::invalid_argument);
  bad = a;
  bad.experts[0] = 0.5f;  // not an id
  EXPECT_THROW(compare_routes(a.route(), bad.route()), std::invalid_argument);
  bad = a;
  bad.probs.pop_back();
  EXPECT_THROW(compare_routes(a.route(), bad.route()), std::invalid_argument);
}

TEST(Routing, SummaryFromRowsMadeByHand) {
  const auto a = make_routing_analysis();
  // Two chunks, one layer, two positions each; chunk 1's position 5 changed its experts.
  auto row = [](const char* pair, int64_t pos, int64_t changed, double out_kl) {
    return CellRow{std::string(pair), int64_t{1}, pos, changed, int64_t{0}, changed ? 1.0 / 3 : 1.0,
                   0.01, changed ? 0.5 : 0.0, 0.02, out_kl, std::string("0 1"),
                   std::string(changed ? "0 2" : "0 1")};
  };
  std::vector<StoredRow> rows = {{0, row("b", 4, 0, 0.1)}, {0, row("b", 5, 0, 0.1)},
                                 {1, row("b", 4, 0, 0.1)}, {1, row("b", 5, 1, 0.5)},
                                 {1, row("floor", 5, 0, 0.0)}};
  const SummaryTable t = a->summarize(rows);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(t.rows[0][0]), 1);     // layer
  EXPECT_EQ(std::get<int64_t>(t.rows[0][1]), 4);     // positions
  EXPECT_EQ(std::get<RateCI>(t.rows[0][2]).rate, 0.25);  // experts changed
  EXPECT_EQ(std::get<RateCI>(t.rows[0][9]).rate, 0.0);   // floor changed
  ASSERT_GE(t.notes.size(), 2u);
  EXPECT_EQ(t.notes[0], "B changes 25 % of expert choices; the floor (A vs A′) changes 0 %");
  EXPECT_EQ(std::get<std::string>(t.rows[0][10]), "A vs A′");
  EXPECT_EQ(std::get<std::string>(t.rows[0][12]), "above a zero floor");
  EXPECT_NE(t.notes[1].find("1 of 4"), std::string::npos) << t.notes[1];
  EXPECT_NE(t.notes[1].find("output KL there 0.5"), std::string::npos) << t.notes[1];
}

// B's own floor changes experts more than B does against A: the layer does not clear the floor,
// and the line and the row say so, naming B's floor.
TEST(Routing, LayersAreReadAgainstTheLargerFloor) {
  const auto a = make_routing_analysis();
  auto row = [](const char* pair, int64_t layer, int64_t pos, int64_t changed) {
    return CellRow{std::string(pair), layer, pos, changed, int64_t{0}, 1.0, 0.01, 0.0, 0.02,
                   0.0, std::string("0 1"), std::string(changed ? "0 2" : "0 1")};
  };
  std::vector<StoredRow> rows;
  for (int chunk = 0; chunk < 4; ++chunk) {
    for (int64_t pos = 0; pos < 10; ++pos) {
      rows.push_back({chunk, row("b", 1, pos, pos < 1)});          // 10 %
      rows.push_back({chunk, row("floor", 1, pos, 0)});             // 0 %
      rows.push_back({chunk, row("floor_b", 1, pos, pos < 3)});     // 30 %
      rows.push_back({chunk, row("b", 2, pos, pos < 8)});           // 80 %
      rows.push_back({chunk, row("floor_b", 2, pos, pos < 1 + chunk % 2)});  // 15 %
    }
  }
  const SummaryTable t = a->summarize(rows);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(std::get<RateCI>(t.rows[0][9]).rate, 0.3);
  EXPECT_EQ(std::get<std::string>(t.rows[0][10]), "B vs B′");
  EXPECT_EQ(std::get<std::string>(t.rows[0][12]), "within the floor");
  EXPECT_EQ(std::get<std::string>(t.rows[1][12]), "5.3× floor");
  EXPECT_EQ(t.notes[0], "B changes 45 % of expert choices; the floor (B vs B′) changes 22.5 %; "
                        "1 of 2 MoE layers do not clear the floor");
  for (const auto& r : t.rows) {
    for (size_t k : {2, 3, 9}) {
      const auto& rate = std::get<RateCI>(r[k]);  // no interval: no variation, said so
      EXPECT_EQ(rate.has_interval(), !std::isnan(rate.lo));
      if (rate.has_interval()) {
        EXPECT_GE(rate.lo, 0.0);
        EXPECT_LE(rate.hi, 1.0);
      }
    }
  }
}

TEST(Routing, RouterLogitsAreSoftmaxedFirst) {
  // gpt-oss keeps logits where others keep probabilities: logits that differ by a constant are
  // the same router, and the margin is in probabilities.
  const Owned a{{2.0f, 1.0f, -1.0f, -3.0f}, {0, 1}, {0.7f, 0.3f}};
  Owned b = a;
  for (float& z : b.probs) z += 5;
  const RouteChange c = compare_routes(a.route(), b.route(), true);
  EXPECT_NEAR(c.router_kl, 0.0, 1e-6);
  const double sum = std::exp(2.0) + std::exp(1.0) + std::exp(-1.0) + std::exp(-3.0);
  EXPECT_NEAR(c.margin_a, (std::exp(1.0) - std::exp(-1.0)) / sum, 1e-6);
  EXPECT_TRUE(std::isfinite(compare_routes(a.route(), a.route(), true).router_kl));
}
