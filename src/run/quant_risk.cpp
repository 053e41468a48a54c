#include "run/quant_risk.h"

#include "analysis/quant_risk.h"
#include "common/json_number.h"
#include "run/reference.h"

namespace hd::run {

nlohmann::json reference_quant_risk(const std::string& dir, int bits) {
  const Reference ref = load_reference(dir);
  nlohmann::json taps = nlohmann::json::array();
  std::string worst_error, worst_ratio;
  double max_error = -1, max_ratio = -1;
  for (const auto& t : ref.activations.tensors) {
    if (t.name.find('@') != std::string::npos) continue;  // decode steps: one row each
    const auto q = analysis::quant_risk(t.data, t.shape.at(1), bits);
    taps.push_back({{"name", t.name},
                    {"abs_max", q.abs_max},
                    {"channel_concentration", json_number(q.channel_concentration)},
                    {"error_per_tensor", q.error_per_tensor},
                    {"error_per_channel", q.error_per_channel},
                    {"ratio", json_number(q.ratio)},
                    {"channels_skipped", q.channels_skipped}});
    if (q.error_per_tensor > max_error) max_error = q.error_per_tensor, worst_error = t.name;
    if (q.ratio > max_ratio) max_ratio = q.ratio, worst_ratio = t.name;
  }
  return {{"reference", dir},
          {"bits", bits},
          {"taps", taps},
          {"worst_per_tensor", worst_error},
          {"worst_ratio", worst_ratio}};
}

}  // namespace hd::run
