// RecommendConfig as report.hdy stores it, and the sizes --target-size takes.
#include <algorithm>
#include <cmath>

#include "kinds/recommend/recommend.h"

namespace hd::run {

nlohmann::json to_json(const RecommendConfig& c) {
  nlohmann::json j = {{"model", c.model},
                      {"calibration", c.calibration.path},
                      {"held_out", c.held_out.path},
                      {"base", c.base},
                      {"types", c.types},
                      {"chunk", c.chunk},
                      {"calibration_chunks", c.calibration_chunks},
                      {"held_out_chunks", c.held_out_chunks},
                      {"layers_per_group", c.layers_per_group},
                      {"rounds", c.rounds}};
  if (!c.reuse) j["reuse"] = false;
  if (c.calibration.token_ids) j["calibration_token_ids"] = true;
  if (c.held_out.token_ids) j["held_out_token_ids"] = true;
  if (c.target_bytes > 0) {
    j["target_size"] = c.target_size;
    j["target_bytes"] = c.target_bytes;
  } else {
    j["target_kl"] = c.target_kl;
  }
  return j;
}

RecommendConfig recommend_config_from_json(const nlohmann::json& j) {
  RecommendConfig c;
  c.model = j.at("model");
  c.calibration = {j.at("calibration"), j.value("calibration_token_ids", false)};
  c.held_out = {j.at("held_out"), j.value("held_out_token_ids", false)};
  c.base = j.at("base");
  c.types = j.at("types").get<std::vector<std::string>>();
  c.chunk = j.at("chunk");
  c.calibration_chunks = j.at("calibration_chunks");
  c.held_out_chunks = j.at("held_out_chunks");
  c.layers_per_group = j.at("layers_per_group");
  c.rounds = j.at("rounds");
  c.reuse = j.value("reuse", true);
  if (j.contains("target_bytes")) {
    c.target_size = j.at("target_size");
    c.target_bytes = j.at("target_bytes");
  } else {
    c.target_kl = j.at("target_kl");
  }
  return c;
}

std::optional<uint64_t> parse_size(const std::string& s) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = s.substr(used);
  std::transform(unit.begin(), unit.end(), unit.begin(), ::tolower);
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},        {"b", 1},          {"kib", 1024.0},  {"mib", 1048576.0},
      {"gib", 1073741824.0}, {"tib", 1099511627776.0}, {"kb", 1e3}, {"mb", 1e6},
      {"gb", 1e9},    {"tb", 1e12}};
  for (const auto& [name, scale] : kUnits) {
    if (unit == name && std::isfinite(v) && v * scale >= 1 && v * scale < 1.8e19)
      return static_cast<uint64_t>(v * scale);
  }
  return std::nullopt;
}

}  // namespace hd::run
