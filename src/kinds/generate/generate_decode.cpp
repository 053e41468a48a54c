#include "kinds/generate/generate_decode.h"

#include <algorithm>

#include "common/utf8.h"

namespace hd::kinds {

Completion generate_completion(engine::Arm& arm, std::span<const int32_t> prompt, int max_tokens,
                               engine::Sampler* sampler, const LogitsSeen& seen) {
  Completion c;
  std::vector<float> logits;
  const int n = static_cast<int>(prompt.size());
  const auto v = static_cast<size_t>(arm.model_info().n_vocab);
  arm.run_chunk(prompt, nullptr, logits, n - 1);
  for (int i = 0; i < max_tokens; ++i) {
    const std::span<const float> row(logits.data(), v);
    if (seen) seen(row);
    const double lse = analysis::log_sum_exp(row);
    const analysis::TopK top = analysis::top_k(row, lse);
    const int32_t token = sampler != nullptr ? sampler->sample(row) : top.id[0];
    c.tokens.push_back({token, static_cast<double>(row[static_cast<size_t>(token)]) - lse, top});
    if (engine::ends_generation(arm.model(), token)) {
      c.ended = true;
      break;
    }
    if (i + 1 < max_tokens) arm.run_step(token, n + i, nullptr, logits);
  }
  return c;
}

std::string token_piece(const engine::Model& model, int32_t token) {
  return escape_invalid_utf8(model.token_text(token));
}

int parting_index(const Completion& a, const Completion& b) {
  const size_t n = std::min(a.tokens.size(), b.tokens.size());
  for (size_t i = 0; i < n; ++i) {
    if (a.tokens[i].token != b.tokens[i].token) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace hd::kinds
