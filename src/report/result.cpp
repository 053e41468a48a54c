#include "report/result.h"

namespace hd::report {
namespace {

nlohmann::json top_json(const Loaded& l, const analysis::TopK& t) {
  nlohmann::json a = nlohmann::json::array();
  for (size_t k = 0; k < t.id.size(); ++k) a.push_back({piece_text(l, t.id[k]), t.p[k]});
  return a;
}

}  // namespace

nlohmann::json result_json(const Loaded& l) {
  nlohmann::json chunks = nlohmann::json::array();
  for (const auto& c : l.chunks) {
    nlohmann::json rows = nlohmann::json::array();
    if (!c.tokens.empty()) {
      rows.push_back({{"pos", 0}, {"text", piece_text(l, c.tokens[0])}, {"scored", false}});
    }
    for (const auto& p : c.diff.positions) {
      // The row at p.pos scores the prediction of token p.pos + 1: shown on that token.
      nlohmann::json r = {{"pos", p.pos + 1},       {"text", piece_text(l, p.target)},
                          {"scored", p.scored},     {"kl", p.score.kl},
                          {"nll_a", p.score.nll_a}, {"nll_b", p.score.nll_b}};
      if (p.scored) {
        r["top_a"] = top_json(l, p.score.top_a);
        r["top_b"] = top_json(l, p.score.top_b);
      }
      rows.push_back(std::move(r));
    }
    chunks.push_back({{"chunk", c.chunk}, {"positions", std::move(rows)}});
  }
  return {{"summary", summary_json(l, 0)}, {"chunks", std::move(chunks)}};
}

}  // namespace hd::report
