// How much a tensor of activations would suffer from integer quantization, without running a
// model: symmetric round-to-nearest to int8 or int4 with one scale for the whole tensor and
// with one scale per channel (column). Pure.
//
// The error is the mean over channels of (mean |q - x| / mean |x|) within each channel, not a
// magnitude-weighted average: one outlier channel sets the per-tensor scale and flattens every
// other channel to zero, and a weighted mean would let the outlier hide that damage.
#pragma once
#include <cstdint>
#include <span>

namespace hd::analysis {

struct QuantRisk {
  double abs_max = 0;                // max |x| over the tensor
  double channel_concentration = 0;  // max channel abs-max / median channel abs-max (inf if 0)
  double error_per_tensor = 0;       // mean over channels of the relative error, one scale
  double error_per_channel = 0;      // the same, one scale per channel
  double ratio = 0;                  // per-tensor / per-channel (inf when per-channel is 0)
  int64_t channels_skipped = 0;      // all-zero channels: no relative error to speak of
};

// `x` is [rows][channels], row-major. bits: 8 (levels -127..127) or 4 (-7..7); anything else
// throws InputError. An empty tensor or zero channels throws InputError.
QuantRisk quant_risk(std::span<const float> x, int64_t channels, int bits);

}  // namespace hd::analysis
