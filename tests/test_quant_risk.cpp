// quant-risk on tensors small enough to compute by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "analysis/quant_risk.h"
#include "errors.h"

using hd::analysis::quant_risk;

// Channel 0 is an outlier (±127); channels 1-3 hold 0.3 and 0.5. One scale for the tensor
// (127/127 = 1) rounds 0.3 to 0 and 0.5 to 1: each small channel's relative error is
// (0.3 + 0.5) / (0.3 + 0.5) = 1, the outlier's 0, so the mean over channels is 3/4. One scale per
// channel (0.5/127) keeps 0.5 exact and rounds 0.3 * 254 = 76.2 to 76: error |76 s - 0.3|.
TEST(QuantRisk, OneOutlierChannelRuinsThePerTensorScaleOnly) {
  const float a = 0.3f, b = 0.5f;
  const std::vector<float> x = {127, a, a, a, -127, b, b, b};
  const auto r = quant_risk(x, 4, 8);
  EXPECT_EQ(r.abs_max, 127.0);
  EXPECT_DOUBLE_EQ(r.channel_concentration, 127.0 / 0.5);  // median of {0.5, 0.5, 0.5, 127}
  EXPECT_DOUBLE_EQ(r.error_per_tensor, 0.75);
  const double s = 0.5 / 127;
  const double small = std::fabs(76 * s - double(a)) / (double(a) + double(b));
  EXPECT_DOUBLE_EQ(r.error_per_channel, 3 * small / 4);
  EXPECT_DOUBLE_EQ(r.ratio, 0.75 / (3 * small / 4));
  EXPECT_GT(r.ratio, 100);
  EXPECT_EQ(r.channels_skipped, 0);
}

TEST(QuantRisk, Int4HasSevenLevelsAndZeroChannelsAreSkipped) {
  // One channel {7, 3.5, 0}: int4 scale 1; 3.5 rounds away from zero to 4 (error 0.5 of 10.5).
  const std::vector<float> x = {7, 0, 3.5f, 0, 0, 0};
  const auto r = quant_risk(x, 2, 4);
  EXPECT_EQ(r.channels_skipped, 1);
  EXPECT_DOUBLE_EQ(r.error_per_tensor, 0.5 / 10.5);
  EXPECT_DOUBLE_EQ(r.error_per_channel, 0.5 / 10.5);
  EXPECT_DOUBLE_EQ(r.ratio, 1.0);
  EXPECT_TRUE(std::isinf(r.channel_concentration) || r.channel_concentration > 0);
}

TEST(QuantRisk, ValuesAtTheirChannelsFullScaleLoseNothingPerChannel) {
  // Every channel holds ±its own maximum: per channel each value is exactly ±127 steps (up to
  // the last bit of the scale's division), per tensor 0.5 and 1 are not.
  const std::vector<float> x = {127, -64, 1, 0.5f, -127, 64, -1, -0.5f};
  const auto r = quant_risk(x, 4, 8);
  EXPECT_NEAR(r.error_per_channel, 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.error_per_tensor, (0 + 0 + 0 + 1.0) / 4);  // 0.5 rounds to 1: error 0.5/0.5
}

TEST(QuantRisk, RefusesBadShapesAndBits) {
  const std::vector<float> x = {1, 2, 3};
  EXPECT_THROW(quant_risk(x, 2, 8), hd::InputError);
  EXPECT_THROW(quant_risk(x, 0, 8), hd::InputError);
  EXPECT_THROW(quant_risk(x, 3, 6), hd::InputError);
  EXPECT_THROW(quant_risk({}, 1, 8), hd::InputError);
}
