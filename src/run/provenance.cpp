#include "run/provenance.h"

#include "build_info.h"
#include "commit.h"
#include "common/sha256.h"
#include "engine/arm.h"
#include "engine/server_schedule.h"
#include "engine/system.h"
#include "errors.h"
#include "run/chunk_loop.h"
#include "run/config.h"

namespace hd::run {

// Which loops computed the stored KLs (analysis/kl_kernel.h). A file without it was scored by
// the scalar loop before them, whose last bits differ.
static constexpr const char* kKlKernel = "f64 exp13 kahan8 termwise";
static constexpr const char* kKlBefore = "f64 std::exp, one running sum";

nlohmann::json heterodyne_facts() {
  return {{"version", build::kVersion}, {"commit", build::kCommit}, {"kl_kernel", kKlKernel}};
}

nlohmann::json llama_cpp_facts() {
  return {{"commit", build::kLlamaCommit}, {"flags", build::kLlamaFlags}};
}

nlohmann::json machine_facts() {
  return {{"cpu", engine::cpu_model()},
          {"cpu_features", engine::cpu_features()},
          {"os", engine::os_description()}};
}

static std::string sha256_of_tokens(const std::vector<std::vector<int32_t>>& chunks) {
  std::string bytes;
  for (const auto& c : chunks) {
    for (int32_t t : c) {
      for (int i = 0; i < 4; ++i)
        bytes.push_back(static_cast<char>((static_cast<uint32_t>(t) >> (8 * i)) & 0xff));
    }
  }
  return sha256_bytes(bytes);
}

nlohmann::json tokens_record(const std::vector<std::vector<int32_t>>& chunks) {
  size_t n_tokens = 0;
  for (const auto& c : chunks) n_tokens += c.size();
  return {{"n_chunks", chunks.size()}, {"count", n_tokens}, {"sha256", sha256_of_tokens(chunks)}};
}

nlohmann::json run_provenance(const Input& input, const std::vector<std::vector<int32_t>>& chunks,
                              const std::string& command_line) {
  nlohmann::json p;
  p["heterodyne"] = heterodyne_facts();
  p["llama_cpp"] = llama_cpp_facts();
  p["machine"] = machine_facts();
  p["text"] = {{"path", input.source.path},
               {"sha256", sha256_bytes(input.bytes)},
               {"bytes", input.bytes.size()}};
  if (input.source.token_ids) p["text"]["token_ids"] = true;
  p["tokens"] = tokens_record(chunks);
  p["command_line"] = command_line;
  p["started_at"] = now_utc();
  return p;
}

nlohmann::json arm_facts(const engine::Arm& arm, const std::string& model_sha256) {
  const auto& m = arm.model_info();
  nlohmann::json j = to_json(arm.settings());
  j["n_threads_used"] = arm.n_threads();
  if (const std::string server = engine::server_flags(arm.settings()); !server.empty()) {
    j["server"] = server;  // as llama-server holds the text: show prints it beside the flags
  }
  j["model_sha256"] = model_sha256;
  j["model_size"] = m.file_size;
  j["model_description"] = m.description;
  j["architecture"] = m.architecture;
  j["n_layer"] = m.n_layer;
  j["n_embd"] = m.n_embd;
  j["n_vocab"] = m.n_vocab;
  j["n_params"] = m.n_params;
  j["runs_on"] = arm.facts();  // the process and llama.cpp build, the devices
  return j;
}

void require_same_numerics(const nlohmann::json& provenance, bool force, bool resuming) {
  if (force) return;
  // Resume takes no --force: a file of two builds' rows is never made.
  const std::string remedy =
      resuming ? ": cannot resume (run it again, with --force)" : " (--force to compare anyway)";
  const std::string commit = provenance.at("llama_cpp").at("commit");
  if (commit != build::kLlamaCommit) {
    throw InputError("this run was made with llama.cpp " + commit.substr(0, 12) +
                     ", this build uses " + std::string(build::kLlamaCommit).substr(0, 12) + remedy);
  }
  const auto& facts = provenance.value("heterodyne", nlohmann::json::object());
  const std::string kernel = facts.is_object() ? facts.value("kl_kernel", kKlBefore) : kKlBefore;
  if (kernel != kKlKernel) {
    throw InputError("this run's KLs were computed by heterodyne's '" + kernel +
                     "' loops, this build's are '" + kKlKernel +
                     "': they differ in the last bits" + remedy);
  }
}

std::optional<std::vector<int>> stored_floor_sample(const nlohmann::json& provenance) {
  if (!provenance.contains("floor_chunks")) return std::nullopt;
  const nlohmann::json& j = provenance["floor_chunks"];
  std::vector<int> out;
  for (const auto& c : j.is_array() ? j : nlohmann::json::array({nullptr})) {
    if (!c.is_number_integer() || c.get<long long>() < 0) {
      throw RuntimeError("the run's provenance 'floor_chunks' is not a list of chunk indices");
    }
    out.push_back(c.get<int>());
  }
  return out;
}

}  // namespace hd::run
