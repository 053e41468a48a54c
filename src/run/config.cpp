#include "run/config.h"

#include <algorithm>
#include <type_traits>

#include "analysis/floor_sample.h"
#include "analysis/plugin.h"
#include "engine/worker_build.h"
#include "errors.h"

namespace hd::run {

void arm_settings_into_json(nlohmann::json& j, const engine::ArmSettings& s,
                            const std::set<std::string>& skip, bool later_only_when_set) {
  const engine::ArmSettings defaults;
  engine::for_each_arm_field([&](const auto& field) {
    if (skip.count(field.info.key)) return;
    // A file whose format predates a setting keeps its old bytes while the setting is unused;
    // a plain arm's file never names the server settings (docs/server.md).
    const bool unused = s.*field.member == defaults.*field.member;
    if (unused && ((later_only_when_set && !field.info.required) || field.info.server)) return;
    j[field.info.key] = s.*field.member;
  });
}

void arm_settings_from_json(const nlohmann::json& j, engine::ArmSettings& s,
                            const std::set<std::string>& skip) {
  engine::for_each_arm_field([&](const auto& field) {
    if (skip.count(field.info.key)) return;
    auto& v = s.*field.member;
    using T = typename std::decay_t<decltype(field)>::Value;
    // A later setting absent from an older file reads as the default it ran with.
    v = field.info.required ? j.at(field.info.key).template get<T>() : j.value(field.info.key, v);
  });
}

nlohmann::json to_json(const engine::ArmSettings& s) {
  nlohmann::json j = nlohmann::json::object();
  arm_settings_into_json(j, s, {});
  return j;
}

nlohmann::json to_json_naming(const engine::ArmSettings& s, const std::vector<std::string>& keys) {
  nlohmann::json j = to_json(s);
  engine::for_each_arm_field([&](const auto& field) {
    if (std::find(keys.begin(), keys.end(), field.info.key) != keys.end())
      j[field.info.key] = s.*field.member;
  });
  return j;
}

engine::ArmSettings arm_settings_from_json(const nlohmann::json& j) {
  engine::ArmSettings s;
  arm_settings_from_json(j, s, {});
  return s;
}

nlohmann::json to_json(const DiffConfig& c) {
  nlohmann::json j = {{"a", to_json(c.a)},
          {"b", to_json(c.b)},
          {"b_quant", c.b_quant},
          {"text_file", c.text_file},
          {"chunk", c.chunk},
          {"max_chunks", c.max_chunks},
          {"score_from", c.score_from},
          {"floor", c.floor},
          {"floor_ubatch", c.floor_ubatch},
          {"save_residuals", c.save_residuals},
          {"transplants", c.transplants},
          {"components", c.components},
          {"prefix_reuse", c.prefix_reuse}};
  // Only when asked for: the configuration of a run without plug-ins reads as before.
  if (!c.analyses.empty()) j["analyses"] = c.analyses;
  if (c.skip_unencodable) j["skip_unencodable"] = true;
  if (c.token_ids) j["token_ids"] = true;
  // Files from before the sample measured the floor on every chunk and read as "all".
  if (c.floor && c.floor_chunks != "all") j["floor_chunks"] = c.floor_chunks;
  return j;
}

DiffConfig diff_config_from_json(const nlohmann::json& j) {
  DiffConfig c;
  c.a = arm_settings_from_json(j.at("a"));
  c.b = arm_settings_from_json(j.at("b"));
  c.b_quant = j.at("b_quant").get<std::string>();
  c.text_file = j.at("text_file").get<std::string>();
  c.token_ids = j.value("token_ids", false);
  c.chunk = j.at("chunk").get<int>();
  c.max_chunks = j.at("max_chunks").get<int>();
  c.score_from = j.at("score_from").get<std::string>();
  c.floor = j.at("floor").get<bool>();
  c.floor_ubatch = j.at("floor_ubatch").get<int>();
  c.floor_chunks = j.value("floor_chunks", std::string("all"));
  c.save_residuals = j.at("save_residuals").get<bool>();
  c.transplants = j.value("transplants", false);
  c.components = j.value("components", false);
  c.prefix_reuse = j.value("prefix_reuse", true);
  c.skip_unencodable = j.value("skip_unencodable", false);
  if (j.contains("analyses")) c.analyses = j.at("analyses").get<std::vector<std::string>>();
  return c;
}

int first_scored_target(const std::string& score_from, int n) {
  if (score_from == "half") return n / 2 + 1;
  return std::stoi(score_from);
}

int floor_ubatch_for(int chunk, int a_ubatch) {
  const int effective = std::min(a_ubatch, chunk);
  int ub = (effective / 2) | 1;  // odd, so the chunk splits into unequal ubatches
  if (ub == effective) ub = effective > 2 ? effective - 2 : effective + 2;
  return std::max(ub, 1);
}

int second_floor_ubatch(int chunk, int arm_ubatch, int first) {
  const int effective = std::min(arm_ubatch, chunk);
  for (const int parts : {3, 5, 7}) {
    const int ub = (effective / parts) | 1;
    if (ub > 1 && ub != first && ub < effective) return ub;
  }
  return 0;
}

engine::ArmSettings floor_arm(const DiffConfig& c, const engine::ArmSettings& arm, int split) {
  engine::ArmSettings fs = arm;
  fs.n_ubatch = c.floor_ubatch > 0 ? c.floor_ubatch : floor_ubatch_for(c.chunk, arm.n_ubatch);
  if (split == 1) fs.n_ubatch = second_floor_ubatch(c.chunk, arm.n_ubatch, fs.n_ubatch);
  return fs;
}

void validate(const DiffConfig& c) {
  if (c.chunk < 2) {
    throw InputError("chunk must be at least 2 tokens (one to read, one to predict), not " +
                     std::to_string(c.chunk));
  }
  if (c.max_chunks < 0) throw InputError("--max-chunks must be 0 (all) or more");
  if (c.score_from != "half") {
    size_t used = 0;
    int n = -1;
    try {
      n = std::stoi(c.score_from, &used);
    } catch (const std::exception&) {
    }
    if (used != c.score_from.size() || n < 1 || n >= c.chunk) {
      throw InputError("--score-from must be 'half' or a token index from 1 to chunk - 1, not '" +
                       c.score_from + "'");
    }
  }
  if (c.floor_ubatch < 0) throw InputError("--floor-ub must be at least 1");
  analysis::check_floor_chunks(c.floor_chunks);
  // A malformed --llama-build is refused now, not after quantizing and loading the models.
  engine::check_build_spec(c.a.llama_build);
  engine::check_build_spec(c.b.llama_build);
  for (size_t i = 0; i < c.analyses.size(); ++i) {
    if (analysis::find_chunk_analysis(c.analyses[i]) == nullptr) {
      std::string known;
      for (const auto& a : analysis::chunk_analyses())
        known += (known.empty() ? "" : ", ") + a->name();
      throw InputError("--analysis '" + c.analyses[i] + "' is not an analysis (there are: " +
                       known + ")");
    }
    for (size_t k = 0; k < i; ++k) {
      if (c.analyses[k] == c.analyses[i])
        throw InputError("--analysis '" + c.analyses[i] + "' is given twice");
    }
  }
  if (first_scored_target(c.score_from, c.chunk) > c.chunk - 1) {
    throw InputError("--score-from " + c.score_from +
                     " leaves no position to score in a chunk of " + std::to_string(c.chunk) +
                     " tokens");
  }
}

}  // namespace hd::run
