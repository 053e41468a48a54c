// `heterodyne capture`: a gate reference. One arm reads a golden text once; every tap in
// forward order is kept: inp_embd, then per layer attn_out-N (where the architecture names
// it), ffn_out-N, l_out-N, then result_norm. Written as <dir>/activations.safetensors (one
// [tokens, channels] F32 tensor per tap) and <dir>/manifest.json (what, how and where).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/arm.h"
#include "store/safetensors.h"

namespace hd::run {

struct CaptureConfig {
  engine::ArmSettings arm;
  std::string text_file;
  int max_tokens = 256;  // the text is cut to this many tokens (one batch)
};

struct Tap {
  std::string name;        // what users and the reference call it (inp_embd, l_out-3, ...)
  std::string graph_name;  // the tensor llama.cpp names (embd, l_out-3, ...)
};

// The taps of an architecture with n_layer layers, in forward order.
std::vector<Tap> forward_taps(const std::string& arch, int n_layer);

inline constexpr int kReferenceSchema = 1;

// One arm over `tokens` (one batch, logits everywhere), every tap of forward_taps() kept:
// [tokens][channels] F32 tensors named by tap, in forward order.
std::vector<store::NamedTensor> capture_taps(std::shared_ptr<engine::Model> model,
                                             const engine::ArmSettings& settings,
                                             const std::vector<int32_t>& tokens);

// Runs the capture and writes the reference directory (created if missing; an existing
// reference is replaced only with `force`). Returns the manifest.
nlohmann::json capture_reference(const CaptureConfig& config, const std::string& dir, bool force,
                                 const std::string& command_line);

}  // namespace hd::run
