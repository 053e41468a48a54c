#include "kinds/generate/generate_transplant.h"

#include <string>
#include <vector>

#include "analysis/kl.h"
#include "common/json_number.h"
#include "engine/generation.h"
#include "engine/hook.h"
#include "kinds/generate/generate_decode.h"

namespace hd::kinds {

namespace {

// The restore points in forward order, with their layers (-1: the embedding).
std::vector<std::pair<std::string, int>> points_of(const engine::PointMap& map) {
  std::vector<std::pair<std::string, int>> out{{map.embedding, -1}};
  for (int l = 0; l < map.n_layer; ++l) out.emplace_back(map.residual[static_cast<size_t>(l)], l);
  return out;
}

}  // namespace

nlohmann::json parting_transplant(engine::Arm& a, engine::Arm& b, const engine::PointMap& map,
                                  std::span<const int32_t> sequence, int32_t a_token) {
  const int n = static_cast<int>(sequence.size());
  const auto v = static_cast<size_t>(a.model_info().n_vocab);
  const auto points = points_of(map);
  // Every pass asks for the same points: the scheduler cuts the graph at each node asked for,
  // and B's own pass must be the one its patched passes differ from by the patch alone.
  const auto hook_asking = [&] {
    engine::Hook h;
    engine::tell_rows(map, h);
    for (const auto& [name, layer] : points) h.capture(name);
    return h;
  };
  engine::Hook from_a = hook_asking(), own_b = hook_asking();
  std::vector<float> la, lb, patched;
  a.run_chunk(sequence, &from_a, la, n - 1);
  b.run_chunk(sequence, &own_b, lb, n - 1);
  // Top-1s as generation picks them: among the tokens A's model does not suppress.
  const std::vector<int32_t> suppressed = engine::suppressed_tokens(a.model());
  const auto top1 = [&](const std::vector<float>& l) { return greedy_token({l.data(), v}, suppressed); };
  const int32_t a_top1 = top1(la), b_top1 = top1(lb);
  const auto piece = [&](int32_t t) { return token_piece(a.model(), t); };
  // A layer is named only where teacher forcing reproduces the parting: A's own token from A,
  // another from B. Otherwise the decode steps' kernels made it, and a restore would explain
  // another disagreement than the one shown.
  const bool parts = a_top1 == a_token && b_top1 != a_token;
  nlohmann::json j = {{"a_token", a_token}, {"a_piece", piece(a_token)},  {"a_top1", a_top1},
                      {"a_top1_piece", piece(a_top1)}, {"b_top1", b_top1}, {"b_piece", piece(b_top1)},
                      {"parts", parts}};
  if (!parts) return j;
  analysis::ScoreScratch scratch;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& [name, layer] : points) {
    engine::Hook patch = hook_asking();
    patch.overwrite(name, from_a.first_row(name), from_a.captured(name));
    b.run_chunk(sequence, &patch, patched, n - 1);
    const int32_t t = top1(patched);
    steps.push_back({{"point", name},
                     {"layer", layer},
                     {"top1", t},
                     {"piece", piece(t)},
                     {"kl", json_number(analysis::kl_divergence({la.data(), v}, {patched.data(), v}, scratch))},
                     {"restores", t == a_token}});
  }
  // B's output head given A's logits is A: the step that always restores.
  steps.push_back({{"point", "head"}, {"layer", map.n_layer}, {"top1", a_token},
                   {"piece", piece(a_token)}, {"kl", 0.0},
                   {"restores", true}});
  size_t k = steps.size() - 1;
  while (k > 0 && steps[k - 1]["restores"].get<bool>()) --k;
  j["steps"] = steps;
  j["verdict"] = {{"point", steps[k]["point"]}, {"layer", steps[k]["layer"]}};
  return j;
}

}  // namespace hd::kinds
