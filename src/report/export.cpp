#include "report/export.h"

#include <fmt/format.h>

namespace hd::report {

static std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

void export_positions(std::ostream& os, const Loaded& l, const std::string& format) {
  if (format == "csv") {
    os << "chunk,pos,token_id,token_text,scored,kl,nll_a,nll_b,top1_a,p_top1_a,top1_b,p_top1_b\n";
  }
  for (const auto& c : l.chunks) {
    for (const auto& r : c.diff.positions) {
      const auto it = l.pieces.find(r.target);
      const std::string text = it == l.pieces.end() ? "" : it->second;
      const auto& s = r.score;
      if (format == "csv") {
        // {} prints the shortest text that reads back as the same double / float.
        os << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", c.chunk, r.pos, r.target,
                          csv_field(text), r.scored ? 1 : 0, s.kl, s.nll_a, s.nll_b, s.top_a.id[0],
                          s.top_a.p[0], s.top_b.id[0], s.top_b.p[0]);
      } else {
        nlohmann::json j = {{"chunk", c.chunk},        {"pos", r.pos},
                            {"token_id", r.target},    {"token_text", text},
                            {"scored", r.scored},      {"kl", s.kl},
                            {"nll_a", s.nll_a},        {"nll_b", s.nll_b},
                            {"top1_a", s.top_a.id[0]}, {"p_top1_a", s.top_a.p[0]},
                            {"top1_b", s.top_b.id[0]}, {"p_top1_b", s.top_b.p[0]}};
        os << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      }
    }
  }
}

}  // namespace hd::report
