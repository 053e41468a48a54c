// `heterodyne generate`: where two arms' generated text parts (docs/generate.md). Both arms
// decode from each prompt, greedily (or with llama.cpp's sampler chain and one seed on both),
// token by token as llama.cpp generates: the prompt as one batch, then one decode step per token.
// Per prompt: the first token where B's completion leaves A's ("parted: never" where they agree
// to the end), both arms' top-5 and margin there, and which layer, copied from A into B on the
// common prefix teacher-forced, gives back A's token. B over --trials server compositions (a
// server arm: trial t takes neighbour seed S + t and slot (K + t) mod slots) gives the number of
// distinct completions per prompt, the measure users count.
//
// Stored in an experiment file of kind "generate": meta "config" and "provenance", the tables of
// generate_rows.h, one prompt per transaction, and at the end meta "generate" (the summary).
// It resumes per prompt, verifies token for token, and shards by prompt (merge joins the parts).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/progress.h"
#include "engine/arm_settings.h"
#include "run/chunk_loop.h"
#include "run/input.h"
#include "run/shard.h"
#include "run/verify.h"

namespace hd::store {
class Experiment;
}

namespace hd::kinds {

inline constexpr std::string_view kGenerateKind = "generate";

struct GenerateConfig {
  engine::ArmSettings a, b;
  std::string b_quant;  // B's model is A's quantized to this type (cached; b.model its path)
  std::string prompts_file;  // one prompt a line, or JSON lines with a "prompt" field (.jsonl)
  bool chat = false;         // the model's own chat template around each prompt
  int max_tokens = 64;
  int max_prompts = 0;  // 0: every prompt
  int trials = 1;       // B's server compositions; more than 1 only for a server arm
  double temperature = 0;  // 0: greedy
  uint32_t seed = 0;       // the sampler's, on both arms, where temperature > 0
  bool transplants = true;  // at every parting, which layer copied from A gives back A's token
};

nlohmann::json to_json(const GenerateConfig& c);
GenerateConfig generate_config_from_json(const nlohmann::json& j);

// InputError for a configuration no run can have (checked before anything loads).
void check_generate_config(const GenerateConfig& c);

// `shard`: this part's prompts only (run/shard.h: prompt p belongs to shard p mod N).
run::RunEnd generate_run(const GenerateConfig& config, const std::string& out, bool replace,
                         const std::string& command_line, const ProgressFn& progress,
                         const std::optional<run::Shard>& shard = std::nullopt);
run::RunEnd generate_resume(const std::string& path, const std::string& command_line,
                            const ProgressFn& progress, const run::InputPath& again);
// Every stored prompt generated again and compared token for token, bit for bit: RuntimeError at
// the first difference.
void generate_verify(const std::string& path, const run::VerifyOptions& options,
                     const ProgressFn& progress);

// The prompts a part holds rows of, each read and checked (InputError naming the part).
std::vector<int> stored_generate_prompts(const store::Experiment& part);
// merge's last step (run/merge.h Sharding::finish): a prompt of the `n_prompts` missing or whose
// rows no longer hash as its part recorded, or nothing; then the run's summary, of every prompt.
std::optional<std::string> finish_merged_generate(store::Experiment& merged, int n_prompts);

}  // namespace hd::kinds
