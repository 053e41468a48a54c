#include "run/reference.h"

#include <filesystem>
#include <fstream>

#include "common/input_file.h"
#include "errors.h"
#include "run/capture.h"
#include "run/config.h"

namespace hd::run {
namespace fs = std::filesystem;

nlohmann::json read_json_file(const std::string& path, const std::string& missing) {
  refuse_special_file(path, "reference file");  // a FIFO would block the read forever
  std::ifstream in(path);
  if (!in) throw InputError(missing);
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception&) {
    throw InputError("'" + path + "' is not valid JSON");
  }
}

Reference load_reference(const std::string& dir) {
  Reference r;
  r.manifest = read_json_file((fs::path(dir) / "manifest.json").string(),
                              "'" + dir + "' is not a reference (no manifest.json; run capture)");
  if (!r.manifest.is_object()) throw InputError("'" + dir + "/manifest.json' is not a JSON object");
  const int schema = r.manifest.contains("schema_version") && r.manifest["schema_version"].is_number_integer()
                         ? r.manifest["schema_version"].get<int>()
                         : 0;
  if (schema != kReferenceSchema) {
    throw InputError("'" + dir + "' is a reference of schema " + std::to_string(schema) +
                     "; this build reads " + std::to_string(kReferenceSchema) +
                     " (capture it again)");
  }
  // Every field later read is checked here, once: a damaged manifest is one clear error.
  try {
    const auto& m = r.manifest;
    r.tokens = m.at("tokens").get<std::vector<int32_t>>();
    r.decode_steps = m.at("decode").at("steps").get<int>();
    r.continuation = m.at("decode").at("tokens").get<std::vector<int32_t>>();
    (void)reference_arm(m);
    (void)m.at("model").at("sha256").get<std::string>();
    (void)m.at("model").at("n_head").get<int>();
    (void)m.at("text").at("path").get<std::string>();
    (void)m.at("text").at("sha256").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError("'" + dir + "/manifest.json' is damaged or not heterodyne's (" +
                     std::string(e.what()).substr(0, 120) + ")");
  }
  if (r.decode_steps < 0) throw InputError("'" + dir + "/manifest.json' has negative decode steps");
  if (r.continuation.size() != static_cast<size_t>(r.decode_steps)) {
    throw InputError("'" + dir + "/manifest.json' has " + std::to_string(r.decode_steps) +
                     " decode steps but " + std::to_string(r.continuation.size()) + " tokens");
  }
  r.activations = store::read_safetensors((fs::path(dir) / "activations.safetensors").string());
  return r;
}

engine::ArmSettings reference_arm(const nlohmann::json& m) {
  nlohmann::json settings = m.at("settings");  // diff's arm JSON but for the model's path
  settings["model"] = m.at("model").at("path");
  return arm_settings_from_json(settings);
}

}  // namespace hd::run
