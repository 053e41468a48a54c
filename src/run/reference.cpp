#include "run/reference.h"

#include <filesystem>
#include <fstream>

#include "errors.h"
#include "run/capture.h"

namespace hd::run {
namespace fs = std::filesystem;

nlohmann::json read_json_file(const std::string& path, const std::string& missing) {
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
  const int schema = r.manifest.value("schema_version", 0);
  if (schema != kReferenceSchema) {
    throw InputError("'" + dir + "' is a reference of schema " + std::to_string(schema) +
                     "; this build reads " + std::to_string(kReferenceSchema) +
                     " (capture it again)");
  }
  try {
    r.tokens = r.manifest.at("tokens").get<std::vector<int32_t>>();
    r.decode_steps = r.manifest.at("decode").at("steps").get<int>();
    r.continuation = r.manifest.at("decode").at("tokens").get<std::vector<int32_t>>();
  } catch (const nlohmann::json::exception&) {
    throw InputError("'" + dir + "/manifest.json' lacks its tokens or decode steps");
  }
  if (r.continuation.size() != static_cast<size_t>(r.decode_steps)) {
    throw InputError("'" + dir + "/manifest.json' has " + std::to_string(r.decode_steps) +
                     " decode steps but " + std::to_string(r.continuation.size()) + " tokens");
  }
  r.activations = store::read_safetensors((fs::path(dir) / "activations.safetensors").string());
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

}  // namespace hd::run
