// What a stored run records about how it was made: the run facts every experiment has (the
// heterodyne and llama.cpp builds, the machine, the text and its tokens, the command line,
// the start time) and the arm facts (an arm's settings, its model, where it ran). diff, sweep
// and floor store them in meta "provenance"; capture's manifest takes the build and machine
// parts. docs/experiment-format.md lists every key.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "run/input.h"

namespace hd::engine {
class Arm;
}

namespace hd::run {

// {version, commit} of this heterodyne, {commit, flags} of the llama.cpp it was built with,
// {cpu, cpu_features, os} of this machine.
nlohmann::json heterodyne_facts();
nlohmann::json llama_cpp_facts();
nlohmann::json machine_facts();

// The three above (keys heterodyne, llama_cpp, machine), the input "text" {path, sha256, bytes,
// and token_ids: true for a --tokens file (absent for a text: files of text runs keep their
// bytes)}, its tokens (tokens_record), the command line and the start time (UTC, ISO 8601).
nlohmann::json run_provenance(const Input& input, const std::vector<std::vector<int32_t>>& chunks,
                              const std::string& command_line);

// The chunks as provenance "tokens" records them: {n_chunks, count, sha256}.
nlohmann::json tokens_record(const std::vector<std::vector<int32_t>>& chunks);

// One arm: its settings, n_threads_used, model_sha256, the model's size, description,
// architecture and shape, and runs_on (the process and llama.cpp build, the devices).
nlohmann::json arm_facts(const engine::Arm& arm, const std::string& model_sha256);

// What verify re-runs, or resume adds to, must be computed by the llama.cpp and the KL loops
// the run used: InputError naming both otherwise, unless `force`. `resuming`: the message says
// the file cannot be resumed (resume has no --force).
void require_same_numerics(const nlohmann::json& provenance, bool force, bool resuming = false);

// The sample a stored diff measured (provenance "floor_chunks", written by diff): nullopt for
// files from before it, which measured every chunk. RuntimeError when it is not a list of
// chunk indices.
std::optional<std::vector<int>> stored_floor_sample(const nlohmann::json& provenance);

}  // namespace hd::run
