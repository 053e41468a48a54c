#include "kinds/check/check.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "analysis/head_diff.h"
#include "analysis/tap_diff.h"
#include "common/json_number.h"
#include "common/output_file.h"
#include "common/sha256.h"
#include "engine/model.h"
#include "engine/point_survey.h"
#include "errors.h"
#include "run/capture.h"
#include "run/reference.h"
#include "run/text.h"
#include "store/safetensors.h"

namespace hd::kinds {
namespace fs = std::filesystem;
using run::capture_taps;
using run::kqv_layer;
using run::Reference;

// tolerances.json's atol by tap name.
static std::map<std::string, double, std::less<>> read_tolerances(const std::string& reference) {
  const nlohmann::json tol =
      run::read_json_file((fs::path(reference) / "tolerances.json").string(),
                     "'" + reference + "' has no tolerances.json: run calibrate first");
  std::map<std::string, double, std::less<>> atol_of;
  try {
    for (const auto& t : tol.at("taps"))
      atol_of[t.at("name").get<std::string>()] = t.at("atol").get<double>();
  } catch (const nlohmann::json::exception&) {
    throw InputError("'" + reference + "/tolerances.json' is damaged: run calibrate again");
  }
  return atol_of;
}

// InputError unless the reference's tokens are this model's: they fit its vocabulary and, when
// the captured text is still there unchanged, the model tokenizes it the same.
static void require_same_tokens(const Reference& ref, const engine::Model& model) {
  for (int32_t t : ref.tokens) {
    if (t < 0 || t >= model.info().n_vocab) {
      throw InputError("the reference's tokens do not fit this model's vocabulary");
    }
  }
  // Token ids (--tokens) are not tokenized: nothing more to compare.
  if (ref.manifest["text"].value("token_ids", false)) return;
  const std::string text_path = ref.manifest["text"]["path"];
  // A text capture read from standard input ("-") is not there to compare.
  if (std::error_code ec; text_path != "-" && fs::is_regular_file(text_path, ec)) {
    // The text is still there: if it is the same text, it must tokenize the same.
    std::string text;
    try {
      text = run::read_text_file(text_path);
    } catch (const InputError&) {
      text.clear();  // unreadable now: nothing to compare
    }
    // With the lines capture dropped (--skip-unencodable) dropped again.
    const bool skip = ref.manifest["text"].value("skip_unencodable", false);
    if (!text.empty() && sha256_bytes(text) == ref.manifest["text"]["sha256"] &&
        run::tokenize_text(model, run::encodable_text(model, text, skip, [](const std::string&) {}),
                      ref.tokens.size()) != ref.tokens) {
      throw InputError("this model tokenizes the reference's text differently");
    }
  }
}

// One attention-output tap per head: each head's max |delta| and the heads over `atol`.
static nlohmann::json head_row(const store::NamedTensor& cand, const std::vector<float>& ref_data,
                               int n_head, double atol) {
  const auto h = analysis::head_delta(ref_data, cand.data, static_cast<int>(cand.shape[1]), n_head);
  nlohmann::json over_heads = nlohmann::json::array(), max_abs = nlohmann::json::array();
  for (size_t i = 0; i < h.max_abs.size(); ++i) {
    if (!(h.max_abs[i] <= atol)) over_heads.push_back(i);  // a NaN is over, never within
    max_abs.push_back(json_number(h.max_abs[i]));
  }
  return {{"tap", cand.name},        {"layer", kqv_layer(cand.name)},
          {"max_abs", max_abs},      {"worst_head", h.worst},
          {"median", json_number(h.median)}, {"concentration", json_number(h.concentration)},
          {"tolerance", json_number(atol)},  {"heads_over", over_heads}};
}

nlohmann::json check_reference(const CheckConfig& c) {
  return check_reference(c, run::load_reference(c.reference));
}

nlohmann::json check_reference(const CheckConfig& c, const Reference& ref) {
  const auto atol_of = read_tolerances(c.reference);
  const int steps = c.decode_steps < 0 ? ref.decode_steps : c.decode_steps;
  if (steps > ref.decode_steps) {
    throw InputError("the reference has " + std::to_string(ref.decode_steps) +
                     " decode steps, not " + std::to_string(steps) +
                     ": capture it again with --decode " + std::to_string(steps));
  }
  if (!c.allow_model_change && sha256_file(c.arm.model) != ref.manifest["model"]["sha256"]) {
    throw InputError("'" + c.arm.model +
                     "' is not the reference's model (sha256 differs); "
                     "--allow-model-change compares it anyway");
  }
  auto model = engine::model_load(c.arm.model);
  require_same_tokens(ref, *model);
  const auto taps = capture_taps(model, c.arm, ref.tokens, steps, ref.continuation).tensors;
  std::map<std::string, const store::NamedTensor*, std::less<>> ref_of;
  for (const auto& t : ref.activations.tensors) ref_of[t.name] = &t;
  // Every prompt tap of the reference is compared: one the candidate's points lack is a
  // refusal, never a tap left out of the verdict.
  std::set<std::string, std::less<>> cand_names;
  for (const auto& t : taps) cand_names.insert(t.name);
  for (const auto& t : ref.activations.tensors) {
    if (t.name.find('@') == std::string::npos && !cand_names.count(t.name)) {
      throw InputError("tap " + t.name + " of the reference is not a point of the candidate (a "
                       "model of another architecture, or another llama.cpp build?)");
    }
  }
  const int n_head = ref.manifest["model"].value("n_head", 0);

  nlohmann::json rows = nlohmann::json::array(), heads = nlohmann::json::array();
  nlohmann::json first_head = nullptr;
  std::string first;
  for (const auto& cand : taps) {
    const auto r = ref_of.find(cand.name);
    if (r == ref_of.end() || r->second->shape != cand.shape) {
      throw InputError("tap " + cand.name + ": " +
                       (r == ref_of.end() ? "not in the reference" : "shape differs") +
                       " (a model of another architecture or shape?)");
    }
    const auto atol_it = atol_of.find(cand.name);
    if (atol_it == atol_of.end()) {
      throw InputError("tolerances.json has no tolerance for " + cand.name +
                       ": run calibrate again");
    }
    const std::vector<float>& ref_data = r->second->data;
    const auto d = analysis::tap_delta(ref_data, cand.data);
    double atol = atol_it->second;
    if (c.jitter_floor > 0) atol = std::max(atol, c.jitter_floor * d.ref_abs_max);  // only loosens
    // A NaN anywhere in either tap (max |Δ| skips it, the mean does not) is over: a tap that
    // cannot be compared never passes.
    const bool over = d.max_abs > atol || !std::isfinite(d.mean_abs);
    if (over && first.empty()) first = cand.name;
    // json_number: "inf" for +inf (rel err over a zero tap), null for NaN (JSON has neither).
    rows.push_back({{"name", cand.name},
                    {"max_abs", json_number(d.max_abs)},
                    {"mean_abs", json_number(d.mean_abs)},
                    {"rel_err", json_number(d.rel_err)},
                    {"tolerance", json_number(atol)},
                    {"over", over}});
    if (!c.per_head || kqv_layer(cand.name) < 0) continue;
    heads.push_back(head_row(cand, ref_data, n_head, atol));
    if (first_head.is_null() && !heads.back().at("heads_over").empty()) first_head = heads.back();
  }
  if (c.per_head && heads.empty()) {
    throw InputError("--per-head: '" + c.arm.model + "' has no per-head attention tap (heterodyne "
                     "points --model " + c.arm.model + ")");
  }
  nlohmann::json result = {
      {"passed", first.empty()},
      {"first_divergent_tap", first.empty() ? nlohmann::json(nullptr) : nlohmann::json(first)},
      {"decode_steps", steps},
      {"taps", rows},
      {"per_head", heads}};
  if (c.per_head) result["first_divergent_head"] = first_head;
  return result;
}

}  // namespace hd::kinds
