// `heterodyne capture`: a gate reference. One arm reads a golden text once; every tap in
// forward order is kept: inp_embd, then per layer kqv_out-N (attention before its output
// projection, heads side by side: what --per-head splits), attn_out-N (after it), ffn_out-N,
// l_out-N, then result_norm, each where the model's point map has it (engine/points.h; the
// manifest records each tap's graph name, which may differ: l_last-N, attn_pregate-N). With decode steps, the arm
// then generates greedily one token at a time and each step's taps are kept as
// `<tap>@token_<i>`. Written as <dir>/activations.safetensors (one [rows, channels] F32 tensor
// per tap) and <dir>/manifest.json (what, how and where).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/arm.h"
#include "engine/points.h"
#include "store/safetensors.h"

namespace hd::run {

struct CaptureConfig {
  engine::ArmSettings arm;
  std::string text_file;
  bool token_ids = false;  // text_file holds token ids (--tokens); the manifest's "text" says so
  int max_tokens = 256;  // the text is cut to this many tokens (one batch)
  int decode_steps = 0;  // single-token steps after the prompt (greedy continuation)
  bool skip_unencodable = false;  // as DiffConfig's; the manifest's "text" records it
};

struct Tap {
  std::string name;        // what users and the reference call it (inp_embd, l_out-3, ...)
  std::string graph_name;  // the tensor llama.cpp names (embd, l_out-3, l_last-3, ...)
};

// The taps of one batch through a model with these points, in forward order.
std::vector<Tap> forward_taps(const engine::PointMap& points);

// The name of a tap at decode step `step` (0-based): l_out-7@token_3.
std::string step_tap_name(const std::string& tap, int step);

// kqv_out-N -> N; -1 for any other tap (decode steps included: kqv_out-N@token_i -> N).
int kqv_layer(const std::string& tap_name);

// Schema 2 added kqv_out-N taps and decode steps.
inline constexpr int kReferenceSchema = 2;

struct Captured {
  // In forward order: each prompt tap, then the same tap at every decode step, so the order is
  // layer, then block, then step, and everything a tensor depends on comes before it.
  std::vector<store::NamedTensor> tensors;  // prompt taps [tokens][channels], steps [1][channels]
  std::vector<int32_t> continuation;        // the tokens the decode steps were fed
  std::vector<Tap> taps;                    // what the tensors are, tap by tap
};

// One arm over `prompt` (one batch, logits everywhere), then `decode_steps` single-token steps.
// The steps are fed `feed` when it is given (a candidate takes the reference's tokens), else
// the arm's own greedy continuation: step 0 takes the argmax after the prompt. The taps are
// those of `points`, the model's map, surveyed here when not given (a caller that captures the
// same model several times surveys it once).
Captured capture_taps(std::shared_ptr<engine::Model> model, const engine::ArmSettings& settings,
                      const std::vector<int32_t>& prompt, int decode_steps = 0,
                      const std::vector<int32_t>& feed = {},
                      const engine::PointMap* points = nullptr);

// Runs the capture and writes the reference directory (created if missing; an existing
// reference is replaced only with `force`). Returns the manifest. `progress` hears of lines
// --skip-unencodable dropped.
nlohmann::json capture_reference(
    const CaptureConfig& config, const std::string& dir, bool force,
    const std::string& command_line,
    const std::function<void(const std::string&)>& progress = [](const std::string&) {});

}  // namespace hd::run
