#include "kinds/generate/generate_decode.h"

#include <algorithm>
#include <cmath>

#include "common/utf8.h"

namespace hd::kinds {

int32_t greedy_token(std::span<const float> row, const std::vector<int32_t>& suppressed) {
  if (suppressed.empty())
    return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
  std::vector<float> kept(row.begin(), row.end());
  for (const int32_t t : suppressed) {
    if (t >= 0 && static_cast<size_t>(t) < kept.size()) kept[static_cast<size_t>(t)] = -INFINITY;
  }
  return static_cast<int32_t>(std::max_element(kept.begin(), kept.end()) - kept.begin());
}

Completion generate_completion(engine::Arm& arm, const engine::Model& rules,
                               std::span<const int32_t> prompt, int max_tokens,
                               engine::Sampler* sampler, const LogitsSeen& seen) {
  Completion c;
  const std::vector<int32_t> suppressed = engine::suppressed_tokens(rules);
  std::vector<float> logits;
  const int n = static_cast<int>(prompt.size());
  const auto v = static_cast<size_t>(arm.model_info().n_vocab);
  arm.run_chunk(prompt, nullptr, logits, n - 1);
  for (int i = 0; i < max_tokens; ++i) {
    const std::span<const float> row(logits.data(), v);
    if (seen) seen(row);
    const double lse = analysis::log_sum_exp(row);
    const analysis::TopK top = analysis::top_k(row, lse);
    const int32_t token = sampler != nullptr   ? sampler->sample(row)
                          : suppressed.empty() ? top.id[0]
                                               : greedy_token(row, suppressed);
    c.tokens.push_back({token, static_cast<double>(row[static_cast<size_t>(token)]) - lse, top, {}, {}});
    if (engine::ends_generation(rules, token)) {
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
