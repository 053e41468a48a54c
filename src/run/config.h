// What a diff was asked to do: stored verbatim (as JSON) in the experiment file, so that
// --resume and verify rebuild exactly the same run.
#pragma once
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/arm.h"

namespace hd::run {

struct DiffConfig {
  engine::ArmSettings a;
  engine::ArmSettings b;
  std::string b_quant;  // when set, B's model is A's quantized to this type
  std::string text_file;  // the input: a text, or with token_ids a file of token ids
  // --tokens (run/input.h). Stored only when set, so files of text runs keep their config.
  bool token_ids = false;
  int chunk = 128;
  int max_chunks = 0;            // 0: every whole chunk of the text
  std::string score_from = "1";  // N (first predicted token index scored) or "half"
  bool floor = true;
  int floor_ubatch = 0;  // 0: chosen by floor_ubatch_for()
  // The chunks the floor is measured on (analysis/floor_sample.h): "auto", "all" or a count.
  std::string floor_chunks = "auto";
  bool save_residuals = false;
  bool transplants = false;  // denoise and noise at inp_embd and every l_out-N
  bool components = false;   // and at every ffn_inp-N: the attention/MLP split
  bool prefix_reuse = true;  // start patched passes at the restore point (run/prefix.h)
  std::vector<std::string> analyses;  // plug-in analyses by name (analysis/plugin.h)
  // Drop the lines of the text the vocabulary cannot encode (run/text.h encodable_text).
  // Stored only when set, so files of runs without it keep their config byte for byte.
  bool skip_unencodable = false;
  // Keep both arms' llama.cpp contexts between passes (run/session_lean.cpp: by default the
  // default diff holds one at a time). The same numbers, so never stored: a resumed run, and
  // parts merged, hold one whatever the first run did.
  bool two_contexts = false;
};

nlohmann::json to_json(const DiffConfig& c);
DiffConfig diff_config_from_json(const nlohmann::json& j);
// An arm as diff's config stores it: every kArmFields entry under its key, but the server
// settings at their defaults (a plain arm's file reads as before them). Reading, a key added
// after the first format may be absent (it reads as the default); an earlier one may not.
nlohmann::json to_json(const engine::ArmSettings& s);
// The same with every key in `keys` written, default or not: where a reader looks settings up by
// name (a sweep's combinations and its A and B), a plain arm's omitted server keys must be there.
nlohmann::json to_json_naming(const engine::ArmSettings& s, const std::vector<std::string>& keys);
engine::ArmSettings arm_settings_from_json(const nlohmann::json& j);
// The same for the settings not named in `skip`, into or out of an object that holds other
// keys too (floor's config, capture's manifest); a skipped setting of `s` is left as it is.
// `later_only_when_set`: a setting added after the first format is written only when it is not
// its default, so that what such a run writes stays byte for byte what it wrote before.
void arm_settings_into_json(nlohmann::json& j, const engine::ArmSettings& s,
                            const std::set<std::string>& skip, bool later_only_when_set = false);
void arm_settings_from_json(const nlohmann::json& j, engine::ArmSettings& s,
                            const std::set<std::string>& skip);

// The first predicted-token index that is scored, for a chunk of n tokens: "half" is
// llama-perplexity's convention (logits from position n/2 on, so tokens n/2 + 1 ...).
int first_scored_target(const std::string& score_from, int n);

// An odd ubatch that splits the chunk differently from arm A's: the numerical floor's arm.
int floor_ubatch_for(int chunk, int a_ubatch);
// The floor's second split: another odd ubatch, neither the first nor the arm's own, so that
// the floor is measured on two splits (one split can be bitwise where another is not: the demo's
// Q4_K_M with flash attention gave 1.03e-4 at ubatch 65 of a 128-token chunk and 1e-8 at 129 of
// a 256-token one). 0 where the chunk is too short for a second (never 1: single-token kernels
// are a decode question, check --decode).
int second_floor_ubatch(int chunk, int arm_ubatch, int first);
// `arm` re-split as its floor arm. Split 0: --floor-ub when given, else floor_ubatch_for(chunk,
// its ubatch). Split 1: second_floor_ubatch from there (n_ubatch 0 where there is none). A
// diff's chunk c is measured at split c % 2 (the split a run has with one chunk: 0).
engine::ArmSettings floor_arm(const DiffConfig& c, const engine::ArmSettings& arm, int split = 0);

// Throws InputError for values no run can use.
void validate(const DiffConfig& c);

}  // namespace hd::run
