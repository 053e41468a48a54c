// One arm's completion of one prompt, generated as llama.cpp generates: the prompt decoded as
// one batch asking for its last position's logits only (as llama-server does), then each chosen
// token decoded alone at the next position (a decode step: one-row kernels, one query row).
// Greedy picks the top-1 (the lowest id among ties, as llama.cpp's greedy and temperature-0
// samplers do); a Sampler draws from llama.cpp's chain. Generation ends at the model's
// end-of-generation token (included) or after max_tokens.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "analysis/kl.h"
#include "engine/arm.h"
#include "engine/generation.h"

namespace hd::kinds {

struct GeneratedToken {
  int32_t token = 0;
  double logprob = 0;    // log p(token) under the softmax of the raw logits
  analysis::TopK top;    // that softmax's top-5 (probabilities as f32)
};

struct Completion {
  std::vector<GeneratedToken> tokens;
  bool ended = false;  // its last token ends a generation (EOS, EOT)
};

// `seen`, when given, is shown each position's raw logits before its token is chosen (the
// llama-server peer test computes the server's probabilities from them).
using LogitsSeen = std::function<void(std::span<const float>)>;
Completion generate_completion(engine::Arm& arm, std::span<const int32_t> prompt, int max_tokens,
                               engine::Sampler* sampler, const LogitsSeen& seen = nullptr);

// The index of the first generated token where `b` leaves `a`, or -1 where they agree to the end
// of the shorter (which, ending with the same tokens, is both: a generation ends only by a token
// or at max_tokens).
int parting_index(const Completion& a, const Completion& b);

// A token's text as the stored views keep it: a byte token's half character as \xHH, so the
// JSON that carries it is valid UTF-8 (display only: ids are what is compared).
std::string token_piece(const engine::Model& model, int32_t token);

// The top-1 probability's lead over the top-2's.
inline double margin(const analysis::TopK& t) { return static_cast<double>(t.p[0]) - t.p[1]; }

}  // namespace hd::kinds
