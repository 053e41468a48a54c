#include "run/capture.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "build_info.h"
#include "commit.h"
#include "common/sha256.h"
#include "engine/hook.h"
#include "engine/model.h"
#include "engine/points.h"
#include "engine/system.h"
#include "errors.h"
#include "store/safetensors.h"

namespace hd::run {
namespace fs = std::filesystem;

std::vector<Tap> forward_taps(const std::string& arch, int n_layer) {
  using engine::PointKind;
  std::vector<Tap> taps = {{"inp_embd", engine::point_name(arch, PointKind::kEmbedding)}};
  for (int il = 0; il < n_layer; ++il) {
    for (PointKind k : {PointKind::kAttnOut, PointKind::kFfnOut, PointKind::kLayerOut}) {
      const std::string g = engine::point_name(arch, k, il);
      if (!g.empty()) taps.push_back({g, g});
    }
  }
  taps.push_back({"result_norm", engine::point_name(arch, PointKind::kResultNorm)});
  return taps;
}

std::vector<store::NamedTensor> capture_taps(std::shared_ptr<engine::Model> model,
                                             const engine::ArmSettings& settings,
                                             const std::vector<int32_t>& tokens) {
  const int n = static_cast<int>(tokens.size());
  engine::Arm arm(model, settings, n);
  const std::vector<Tap> taps = forward_taps(model->info().architecture, model->info().n_layer);
  engine::Hook hook;
  for (const Tap& t : taps) hook.capture(t.graph_name);
  std::vector<float> logits;
  arm.run_chunk(tokens, &hook, logits, 0);  // logits everywhere: the last layer keeps every row
  std::vector<store::NamedTensor> tensors;
  for (const Tap& t : taps) {
    tensors.push_back({t.name, {n, hook.width(t.graph_name)}, hook.captured(t.graph_name)});
  }
  return tensors;
}

nlohmann::json capture_reference(const CaptureConfig& c, const std::string& dir, bool force,
                                 const std::string& command_line) {
  const fs::path out(dir);
  std::error_code ec;
  if (fs::exists(out / "manifest.json", ec) && !force) {
    throw InputError("'" + dir + "' already holds a reference (use --force to replace it)");
  }
  if (c.max_tokens < 2) throw InputError("--max-tokens must be at least 2");
  std::ifstream in(c.text_file, std::ios::binary);
  if (!in) throw InputError("cannot read the text file '" + c.text_file + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (text.empty()) throw InputError("the text file '" + c.text_file + "' is empty");

  auto model = engine::model_load(c.arm.model);
  std::vector<int32_t> tokens = model->tokenize(text, model->info().add_bos);
  if (tokens.size() > static_cast<size_t>(c.max_tokens))
    tokens.resize(static_cast<size_t>(c.max_tokens));
  if (tokens.size() < 2) throw InputError("the text gives fewer than 2 tokens");
  const std::vector<store::NamedTensor> tensors = capture_taps(model, c.arm, tokens);
  const std::vector<Tap> taps = forward_taps(model->info().architecture, model->info().n_layer);
  nlohmann::json tap_list = nlohmann::json::array();
  for (size_t i = 0; i < taps.size(); ++i) {
    tap_list.push_back({{"name", taps[i].name},
                        {"graph_name", taps[i].graph_name},
                        {"shape", tensors[i].shape},
                        {"dtype", "F32"}});
  }
  const engine::ArmSettings& s = c.arm;
  const int threads = s.n_threads > 0 ? s.n_threads : engine::default_threads();
  nlohmann::json manifest = {
      {"schema_version", kReferenceSchema},
      {"model",
       {{"path", c.arm.model},
        {"sha256", sha256_file(c.arm.model)},
        {"architecture", model->info().architecture},
        {"description", model->info().description},
        {"n_layer", model->info().n_layer},
        {"n_embd", model->info().n_embd}}},
      {"settings",
       {{"cache_type_k", s.cache_type_k},
        {"cache_type_v", s.cache_type_v},
        {"flash_attn", s.flash_attn},
        {"n_ubatch", s.n_ubatch},
        {"n_threads", threads}}},
      {"text", {{"path", c.text_file}, {"sha256", sha256_bytes(text)}}},
      {"tokens", tokens},
      {"taps", tap_list},
      {"llama_cpp", {{"commit", build::kLlamaCommit}, {"flags", build::kLlamaFlags}}},
      {"machine", {{"cpu", engine::cpu_model()}, {"cpu_features", engine::cpu_features()}}},
      {"heterodyne", {{"version", build::kVersion}, {"commit", build::kCommit}}},
      {"command_line", command_line}};

  fs::create_directories(out, ec);
  if (ec) throw InputError("cannot create '" + dir + "': " + ec.message());
  store::write_safetensors((out / "activations.safetensors").string(), tensors,
                           {{"format", "heterodyne-reference"}, {"schema_version", "1"}});
  const std::string part = (out / "manifest.json.part").string();
  {
    std::ofstream m(part);
    m << manifest.dump(2) << "\n";
    if (!m.flush()) throw RuntimeError("cannot write " + part);
  }
  fs::rename(part, out / "manifest.json", ec);
  if (ec)
    throw RuntimeError("cannot write " + (out / "manifest.json").string() + ": " + ec.message());
  return manifest;
}

}  // namespace hd::run
