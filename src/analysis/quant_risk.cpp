#include "analysis/quant_risk.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "analysis/stats.h"
#include "errors.h"

namespace hd::analysis {
namespace {

// Symmetric round-to-nearest (half away from zero, as std::round) with clamping.
double quantize(double x, double scale, double qmax) {
  if (scale == 0) return 0;
  const double q = std::clamp(std::round(x / scale), -qmax, qmax);
  return q * scale;
}

}  // namespace

QuantRisk quant_risk(std::span<const float> x, int64_t channels, int bits) {
  if (bits != 8 && bits != 4) throw InputError("quantization bits must be 8 or 4");
  if (channels <= 0 || x.empty() || x.size() % static_cast<size_t>(channels) != 0) {
    throw InputError("a tensor of " + std::to_string(x.size()) + " values is not [rows][" +
                     std::to_string(channels) + "]");
  }
  const double qmax = bits == 8 ? 127.0 : 7.0;
  const size_t c_n = static_cast<size_t>(channels), rows = x.size() / c_n;
  std::vector<double> ch_max(c_n, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < c_n; ++c)
      ch_max[c] = std::max(ch_max[c], std::fabs(double(x[r * c_n + c])));
  }
  QuantRisk out;
  out.abs_max = *std::max_element(ch_max.begin(), ch_max.end());
  const double med = median(ch_max);
  out.channel_concentration = med > 0 ? out.abs_max / med : std::numeric_limits<double>::infinity();
  const double tensor_scale = out.abs_max / qmax;
  double sum_tensor = 0, sum_channel = 0;
  int64_t counted = 0;
  for (size_t c = 0; c < c_n; ++c) {
    double abs_sum = 0, err_tensor = 0, err_channel = 0;
    const double channel_scale = ch_max[c] / qmax;
    for (size_t r = 0; r < rows; ++r) {
      const double v = x[r * c_n + c];
      abs_sum += std::fabs(v);
      err_tensor += std::fabs(quantize(v, tensor_scale, qmax) - v);
      err_channel += std::fabs(quantize(v, channel_scale, qmax) - v);
    }
    if (abs_sum == 0) {
      ++out.channels_skipped;
      continue;
    }
    sum_tensor += err_tensor / abs_sum;  // the 1/rows of both means cancel
    sum_channel += err_channel / abs_sum;
    ++counted;
  }
  if (counted > 0) {
    out.error_per_tensor = sum_tensor / double(counted);
    out.error_per_channel = sum_channel / double(counted);
  }
  out.ratio = out.error_per_channel > 0  ? out.error_per_tensor / out.error_per_channel
              : out.error_per_tensor > 0 ? std::numeric_limits<double>::infinity()
                                         : 1.0;
  return out;
}

}  // namespace hd::analysis
