#include "run/capture.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/output_file.h"
#include "common/sha256.h"
#include "engine/hook.h"
#include "engine/model.h"
#include "engine/point_survey.h"
#include "engine/threads.h"
#include "errors.h"
#include "run/config.h"
#include "run/input.h"
#include "run/provenance.h"
#include "store/safetensors.h"

namespace hd::run {
namespace fs = std::filesystem;

std::vector<Tap> forward_taps(const engine::PointMap& points) {
  using engine::Role;
  std::vector<Tap> taps;
  if (!points.embedding.empty()) taps.push_back({"inp_embd", points.embedding});
  static const std::pair<Role, const char*> kLayerTaps[] = {{Role::kPerHead, "kqv_out"},
                                                            {Role::kAttnOut, "attn_out"},
                                                            {Role::kMlpOut, "ffn_out"},
                                                            {Role::kResidual, "l_out"}};
  for (int il = 0; il < points.n_layer; ++il) {
    for (const auto& [role, label] : kLayerTaps) {
      const std::string& g = points.name(role, il);
      if (!g.empty()) taps.push_back({std::string(label) + "-" + std::to_string(il), g});
    }
  }
  if (!points.result_norm.empty()) taps.push_back({"result_norm", points.result_norm});
  return taps;
}

std::string step_tap_name(const std::string& tap, int step) {
  return tap + "@token_" + std::to_string(step);
}

int kqv_layer(const std::string& tap_name) {
  static const std::string prefix = "kqv_out-";
  if (tap_name.rfind(prefix, 0) != 0) return -1;
  const std::string rest = tap_name.substr(prefix.size(), tap_name.find('@') - prefix.size());
  return rest.empty() ? -1 : std::stoi(rest);
}

namespace {

int32_t argmax(const std::vector<float>& logits) {  // the lowest id among ties
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace

Captured capture_taps(std::shared_ptr<engine::Model> model, const engine::ArmSettings& settings,
                      const std::vector<int32_t>& prompt, int decode_steps,
                      const std::vector<int32_t>& feed, const engine::PointMap* points) {
  const int n = static_cast<int>(prompt.size());
  if (decode_steps < 0) throw InputError("--decode must not be negative");
  if (!feed.empty() && feed.size() < static_cast<size_t>(decode_steps)) {
    throw RuntimeError("fewer tokens to feed than decode steps");
  }
  const engine::ModelInfo& info = model->info();
  // In 64 bits: n + decode_steps overflows an int long before any context is that large.
  if (int64_t{n} + decode_steps > int64_t{info.n_ctx_train}) {
    throw InputError(std::to_string(n) + " tokens and " + std::to_string(decode_steps) +
                     " decode steps do not fit the model's context of " +
                     std::to_string(info.n_ctx_train));
  }
  engine::Arm arm(model, settings, n + decode_steps);
  const std::vector<Tap> taps =
      forward_taps(points != nullptr ? *points : engine::survey_points(model));
  engine::Hook hook;
  for (const Tap& t : taps) hook.capture(t.graph_name);
  std::vector<float> logits;
  arm.run_chunk(prompt, &hook, logits, 0);  // logits everywhere: the last layer keeps every row

  // tensors[tap][0] is the prompt's, tensors[tap][1 + i] step i's.
  std::vector<std::vector<store::NamedTensor>> per_tap(taps.size());
  for (size_t k = 0; k < taps.size(); ++k) {
    const Tap& t = taps[k];
    per_tap[k].push_back({t.name, {n, hook.width(t.graph_name)}, hook.captured(t.graph_name)});
  }
  Captured out;
  out.taps = taps;
  const size_t n_vocab = static_cast<size_t>(info.n_vocab);
  std::vector<float> last(logits.end() - static_cast<std::ptrdiff_t>(n_vocab), logits.end());
  for (int i = 0; i < decode_steps; ++i) {
    const int32_t token = feed.empty() ? argmax(last) : feed[static_cast<size_t>(i)];
    out.continuation.push_back(token);
    engine::Hook step_hook;
    for (const Tap& t : taps) {
      step_hook.capture(t.graph_name);
      step_hook.expect_width(t.graph_name, hook.width(t.graph_name));  // 3-D points: one row
    }
    arm.run_step(token, n + i, &step_hook, last);
    for (size_t k = 0; k < taps.size(); ++k) {
      const Tap& t = taps[k];
      per_tap[k].push_back({step_tap_name(t.name, i),
                            {1, step_hook.width(t.graph_name)},
                            step_hook.captured(t.graph_name)});
    }
  }
  for (auto& group : per_tap) {
    for (auto& tensor : group) out.tensors.push_back(std::move(tensor));
  }
  return out;
}

// The manifest's "text": where it was and its hash, and, with --skip-unencodable, that lines
// were dropped (check drops the same ones before comparing tokenizations).
static nlohmann::json text_manifest(const CaptureConfig& c, const Input& input, size_t dropped) {
  nlohmann::json t = {{"path", c.text_file}, {"sha256", sha256_bytes(input.bytes)}};
  if (c.token_ids) t["token_ids"] = true;  // check compares no tokenization then
  if (c.skip_unencodable) {
    t["skip_unencodable"] = true;
    t["unencodable_lines_dropped"] = dropped;
  }
  return t;
}

nlohmann::json capture_reference(const CaptureConfig& c, const std::string& dir, bool force,
                                 const std::string& command_line,
                                 const std::function<void(const std::string&)>& progress) {
  const fs::path out(dir);
  std::error_code ec;
  if (fs::exists(out / "manifest.json", ec) && !force) {
    throw InputError("'" + dir + "' already holds a reference (use --force to replace it)");
  }
  if (c.max_tokens < 2) throw InputError("--max-tokens must be at least 2");
  if (c.decode_steps < 0) throw InputError("--decode must not be negative");
  const Input input = read_input({c.text_file, c.token_ids}, c.skip_unencodable);
  auto model = engine::model_load(c.arm.model);
  size_t dropped = 0;
  const std::vector<int32_t> tokens = input_tokens(
      *model, input, c.skip_unencodable, static_cast<size_t>(c.max_tokens), progress, &dropped);
  if (tokens.size() < 2) throw InputError(input.name() + " gives fewer than 2 tokens");
  engine::ArmSettings arm = c.arm;  // a reference's threads never follow the machine's load
  if (arm.n_threads == 0) arm.n_threads = engine::allowed_cpus();
  const Captured captured = capture_taps(model, arm, tokens, c.decode_steps);
  const std::vector<store::NamedTensor>& tensors = captured.tensors;
  const std::vector<Tap>& taps = captured.taps;
  nlohmann::json tap_list = nlohmann::json::array();
  const size_t per_tap = 1 + static_cast<size_t>(c.decode_steps);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const size_t step = i % per_tap;
    tap_list.push_back({{"name", tensors[i].name},
                        {"graph_name", taps[i / per_tap].graph_name},
                        {"step", step == 0 ? nlohmann::json(nullptr) : nlohmann::json(step - 1)},
                        {"shape", tensors[i].shape},
                        {"dtype", "F32"}});
  }
  // Diff's arm JSON but for the model (its own entry below), with the threads it ran with.
  nlohmann::json settings = nlohmann::json::object();
  arm_settings_into_json(settings, arm, {"model"}, true);
  nlohmann::json manifest = {
      {"schema_version", kReferenceSchema},
      {"model",
       {{"path", c.arm.model},
        {"sha256", sha256_file(c.arm.model)},
        {"architecture", model->info().architecture},
        {"description", model->info().description},
        {"n_layer", model->info().n_layer},
        {"n_embd", model->info().n_embd},
        {"n_head", model->info().n_head},
        {"head_dim_v", model->info().head_dim_v}}},
      {"settings", settings},
      {"text", text_manifest(c, input, dropped)},
      {"tokens", tokens},
      {"decode", {{"steps", c.decode_steps}, {"tokens", captured.continuation}}},
      {"taps", tap_list},
      // As every experiment's provenance records them (the machine's os since issue 16).
      {"llama_cpp", llama_cpp_facts()},
      {"machine", machine_facts()},
      {"heterodyne", heterodyne_facts()},
      {"command_line", command_line}};

  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out, ec)) {
    throw InputError("cannot create the reference directory '" + dir + "': " +
                     (ec ? ec.message() : "a file of that name is in the way"));
  }
  // The directory is this command's own output (--force was checked above); its files may not
  // be what the capture reads.
  const OutputPolicy own(true, {c.arm.model, c.text_file});
  // Both files are written whole before either replaces the old one; the manifest goes last (a
  // reference is a reference once its manifest is there).
  OutputFile activations((out / "activations.safetensors").string(), own);
  activations.write(store::safetensors_bytes(
      tensors, {{"format", "heterodyne-reference"},
                {"schema_version", std::to_string(kReferenceSchema)}}));
  OutputFile manifest_file((out / "manifest.json").string(), own);
  manifest_file.write(manifest.dump(2) + "\n");
  activations.commit();
  manifest_file.commit();
  // Tolerances calibrated for the reference just replaced do not fit the new one.
  fs::remove(out / "tolerances.json", ec);
  return manifest;
}

}  // namespace hd::run
