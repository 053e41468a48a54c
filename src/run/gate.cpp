#include "run/gate.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/tap_diff.h"
#include "common/sha256.h"
#include "engine/model.h"
#include "errors.h"
#include "run/capture.h"
#include "store/safetensors.h"

namespace hd::run {
namespace fs = std::filesystem;
namespace {

nlohmann::json read_json(const fs::path& p, const std::string& missing) {
  std::ifstream in(p);
  if (!in) throw InputError(missing);
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception&) {
    throw InputError("'" + p.string() + "' is not valid JSON");
  }
}

struct Reference {
  nlohmann::json manifest;
  store::SafetensorsFile activations;
  std::vector<int32_t> tokens;
};

Reference load_reference(const std::string& dir) {
  Reference r;
  r.manifest = read_json(fs::path(dir) / "manifest.json",
                         "'" + dir + "' is not a reference (no manifest.json; run capture)");
  if (r.manifest.value("schema_version", 0) != kReferenceSchema) {
    throw InputError("'" + dir + "' is a reference of schema " +
                     std::to_string(r.manifest.value("schema_version", 0)) + "; this build reads " +
                     std::to_string(kReferenceSchema));
  }
  r.activations = store::read_safetensors((fs::path(dir) / "activations.safetensors").string());
  r.tokens = r.manifest.at("tokens").get<std::vector<int32_t>>();
  return r;
}

engine::ArmSettings reference_arm(const nlohmann::json& m) {
  engine::ArmSettings s;
  s.model = m["model"]["path"];
  s.cache_type_k = m["settings"]["cache_type_k"];
  s.cache_type_v = m["settings"]["cache_type_v"];
  s.flash_attn = m["settings"]["flash_attn"];
  s.n_ubatch = m["settings"]["n_ubatch"];
  s.n_threads = m["settings"]["n_threads"];
  return s;
}

}  // namespace

nlohmann::json calibrate_reference(const CalibrateConfig& c) {
  const Reference ref = load_reference(c.reference);
  const engine::ArmSettings base = reference_arm(ref.manifest);
  auto model = engine::model_load(base.model);
  if (sha256_file(base.model) != ref.manifest["model"]["sha256"]) {
    throw InputError("the reference's model '" + base.model + "' has changed since capture");
  }
  // Runs that must not matter: an odd ubatch split of the tokens, a small one, other threads.
  const int n = static_cast<int>(ref.tokens.size());
  std::vector<engine::ArmSettings> runs;
  for (int ub : {n / 2 + 1, 7}) {
    engine::ArmSettings s = base;
    s.n_ubatch = ub;
    if (ub != base.n_ubatch && ub < n) runs.push_back(s);
  }
  engine::ArmSettings other_threads = base;
  other_threads.n_threads = base.n_threads == 1 ? 2 : 1;
  runs.push_back(other_threads);

  std::vector<double> observed(ref.activations.tensors.size(), 0.0);
  nlohmann::json run_list = nlohmann::json::array();
  for (const auto& s : runs) {
    const auto taps = capture_taps(model, s, ref.tokens);
    for (size_t i = 0; i < taps.size(); ++i) {
      observed[i] = std::max(
          observed[i], analysis::tap_delta(ref.activations.tensors[i].data, taps[i].data).max_abs);
    }
    run_list.push_back({{"n_ubatch", s.n_ubatch}, {"n_threads", s.n_threads}});
  }
  bool all_identical = true;
  nlohmann::json taps = nlohmann::json::array();
  for (size_t i = 0; i < observed.size(); ++i) {
    const auto& t = ref.activations.tensors[i];
    const double ref_max = analysis::tap_delta(t.data, t.data).ref_abs_max;
    const double from_runs = c.safety * observed[i], floor = c.jitter_floor * ref_max;
    all_identical &= observed[i] == 0;
    taps.push_back(
        {{"name", t.name},
         {"max_observed", observed[i]},
         {"ref_abs_max", ref_max},
         {"atol", std::max(from_runs, floor)},
         {"derived_from", from_runs >= floor && from_runs > 0 ? "observed" : "jitter_floor"}});
  }
  const nlohmann::json tol = {
      {"schema_version", 1},
      {"safety", c.safety},
      {"jitter_floor", c.jitter_floor},
      {"runs", run_list},
      {"all_bitwise_identical", all_identical},
      {"note", all_identical
                   ? "every calibration run was bitwise identical to the reference: "
                     "tolerances come from the jitter floor alone"
                   : "atol = max(safety x max observed |delta|, jitter_floor x max |ref|)"},
      {"taps", taps}};
  std::ofstream out(fs::path(c.reference) / "tolerances.json");
  out << tol.dump(2) << "\n";
  if (!out.flush()) throw RuntimeError("cannot write tolerances.json in '" + c.reference + "'");
  return tol;
}

nlohmann::json check_reference(const CheckConfig& c) {
  const Reference ref = load_reference(c.reference);
  const nlohmann::json tol =
      read_json(fs::path(c.reference) / "tolerances.json",
                "'" + c.reference + "' has no tolerances.json: run calibrate first");
  if (!c.allow_model_change && sha256_file(c.arm.model) != ref.manifest["model"]["sha256"]) {
    throw InputError("'" + c.arm.model +
                     "' is not the reference's model (sha256 differs); "
                     "--allow-model-change compares it anyway");
  }
  auto model = engine::model_load(c.arm.model);
  for (int32_t t : ref.tokens) {
    if (t < 0 || t >= model->info().n_vocab) {
      throw InputError("the reference's tokens do not fit this model's vocabulary");
    }
  }
  const std::string text_path = ref.manifest["text"]["path"];
  if (std::ifstream in{text_path}; in) {  // the text is still there: it must tokenize the same
    std::ostringstream ss;
    ss << in.rdbuf();
    auto tokens = model->tokenize(ss.str(), model->info().add_bos);
    tokens.resize(std::min(tokens.size(), ref.tokens.size()));
    if (sha256_bytes(ss.str()) == ref.manifest["text"]["sha256"] && tokens != ref.tokens) {
      throw InputError("this model tokenizes the reference's text differently");
    }
  }
  const auto taps = capture_taps(model, c.arm, ref.tokens);
  if (taps.size() != ref.activations.tensors.size()) {
    throw InputError("the candidate has " + std::to_string(taps.size()) + " taps, the reference " +
                     std::to_string(ref.activations.tensors.size()));
  }
  nlohmann::json rows = nlohmann::json::array();
  std::string first;
  for (size_t i = 0; i < taps.size(); ++i) {
    const auto& r = ref.activations.tensors[i];
    if (taps[i].name != r.name || taps[i].shape != r.shape) {
      throw InputError("tap " + r.name + ": shape or name differs from the reference");
    }
    const auto d = analysis::tap_delta(r.data, taps[i].data);
    double atol = tol.at("taps").at(i).at("atol").get<double>();
    if (c.jitter_floor > 0) atol = std::max(atol, c.jitter_floor * d.ref_abs_max);  // only loosens
    const bool over = d.max_abs > atol;
    if (over && first.empty()) first = r.name;
    rows.push_back({{"name", r.name},
                    {"max_abs", d.max_abs},
                    {"mean_abs", d.mean_abs},
                    {"rel_err", d.rel_err},
                    {"tolerance", atol},
                    {"over", over}});
  }
  return {{"passed", first.empty()},
          {"first_divergent_tap", first.empty() ? nlohmann::json(nullptr) : nlohmann::json(first)},
          {"taps", rows},
          {"per_head", nlohmann::json::array()}};
}

}  // namespace hd::run
