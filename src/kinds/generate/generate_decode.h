// One arm's completion of one prompt, generated as llama.cpp generates: the prompt decoded as
// one batch asking for its last position's logits only (as llama-server does), then each chosen
// token decoded alone at the next position (a decode step: one-row kernels, one query row).
// Greedy picks the top-1 (the lowest id among ties, as llama.cpp's greedy and temperature-0
// samplers do) among the tokens the model does not suppress; a Sampler draws from llama.cpp's
// chain. Generation ends at an end-of-generation token (included) or after max_tokens. Both arms
// of a run follow A's model there (its end-of-generation and suppressed tokens): a B whose GGUF
// listed others could otherwise stop where A goes on, and two completions would differ without
// a parting token.
#pragma once
#include <array>
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
  // The texts of the token and of the top-5, as read from a file (token_piece); a generation
  // leaves them empty: the writer takes them from the model.
  std::string piece;
  std::array<std::string, analysis::kTopK> top_pieces;
};

struct Completion {
  std::vector<GeneratedToken> tokens;
  bool ended = false;  // its last token ends a generation (EOS, EOT)
};

// The top-1 among the tokens not `suppressed`, the lowest id among ties (what greedy generation
// and the transplants' comparisons pick).
int32_t greedy_token(std::span<const float> row, const std::vector<int32_t>& suppressed);

// `seen`, when given, is shown each position's raw logits before its token is chosen (the
// llama-server peer test computes the server's probabilities from them).
using LogitsSeen = std::function<void(std::span<const float>)>;
// `rules`: the model whose end-of-generation and suppressed tokens both arms follow (A's).
Completion generate_completion(engine::Arm& arm, const engine::Model& rules,
                               std::span<const int32_t> prompt, int max_tokens,
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
