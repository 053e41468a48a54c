// `heterodyne quant-risk`: how much every stored tap of a reference would suffer from integer
// activation quantization (analysis/quant_risk.h), with no model run. Only the prompt's taps
// count: a decode step's tap has one row, where a per-channel scale is trivially exact.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace hd::run {

// {reference, bits, taps: [{name, abs_max, channel_concentration, error_per_tensor,
//  error_per_channel, ratio, channels_skipped}], worst_per_tensor, worst_ratio}, in forward
// order. Infinite ratios are "inf" (see common/json_number.h).
nlohmann::json reference_quant_risk(const std::string& reference, int bits);

}  // namespace hd::run
