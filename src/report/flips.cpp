#include "report/flips.h"

#include <fmt/format.h>

#include <cmath>

#include "analysis/flips.h"
#include "report/figures.h"

namespace hd::report {

bool compares_builds(const Loaded& l) {
  const auto build = [&](const char* arm) {
    return l.config.contains(arm) ? l.config[arm].value("llama_build", "") : std::string();
  };
  return build("a") != build("b");
}

static std::string context(const Loaded& l, const analysis::Flip& f) {
  for (const auto& c : l.chunks) {
    if (c.chunk != f.chunk) continue;
    std::string s;
    for (int p = std::max(0, f.pos - 8); p <= f.pos; ++p) s += printable(piece_text(l, c.tokens[static_cast<size_t>(p)]));
    return s;
  }
  return "";
}

void print_flips(std::ostream& os, const Loaded& l, int max_rows) {
  const analysis::FlipReport r = analysis::flip_report(l.chunks);
  const auto& s = l.summary.diff;
  const double pct = r.n_scored > 0 ? 100.0 * static_cast<double>(r.flips.size()) / r.n_scored : 0;
  os << fmt::format("top-1 flips: {} of {} scored positions ({:.3g} %)   PPL A {}  B {}{}\n",
                    r.flips.size(), r.n_scored, pct, ppl_text(s.ppl_a), ppl_text(s.ppl_b),
                    s.ppl_a > 0 && !std::isnan(s.ppl_b)
                        ? fmt::format("  ({:+.3g} %)", 100.0 * (s.ppl_b / s.ppl_a - 1))
                        : "");
  if (r.flips.empty()) {
    os << "  no greedy answer changed on this text\n\n";
    return;
  }
  os << fmt::format("  A's margin (top-1 minus top-2 probability) at the flips: median {:.3g}; "
                    "at every scored position: {:.3g}\n",
                    r.median_margin_flipped, r.median_margin_all);
  os << "  chunk:pos  KL         A top-1 (p)          B top-1      …text[next]\n";
  for (size_t i = 0; i < r.flips.size() && static_cast<int>(i) < max_rows; ++i) {
    const auto& f = r.flips[i];
    os << fmt::format("  {:>9}  {:<9.3g}  {:<20} {:<12} …{}[{}]\n",
                      fmt::format("{}:{}", f.chunk, f.pos), f.kl,
                      fmt::format("{} ({:.3f})", printable(piece_text(l, f.top_a)), f.p_top_a),
                      printable(piece_text(l, f.top_b)), context(l, f),
                      printable(piece_text(l, f.target)));
  }
  if (static_cast<int>(r.flips.size()) > max_rows) {
    os << fmt::format("  … {} more (show --json lists them all)\n", r.flips.size() - static_cast<size_t>(max_rows));
  }
  if (!r.layers.empty()) {
    os << "  where they form: residual rel. error per layer, flipped positions vs the rest\n";
    for (const auto& fl : r.layers) {
      os << fmt::format("    layer {:>3}  {:<10.3g} vs {:<10.3g}{}\n", fl.layer, fl.rel_err_flipped,
                        fl.rel_err_other, fl.layer == r.grows_most_at ? "  ← grows most here" : "");
    }
  }
  if (!r.denoise.empty()) {
    os << "  restoring A's residual into B, mean KL left at the flipped positions:\n    ";
    for (const auto& d : r.denoise) os << fmt::format("{} {:.3g}  ", d.point, d.kl_flipped);
    os << "\n";
    if (!r.carried_most_by.empty()) {
      os << "  the largest share is removed by restoring at " << r.carried_most_by << "\n";
    }
  }
  os << "\n";
}

nlohmann::json flips_json(const Loaded& l) {
  const analysis::FlipReport r = analysis::flip_report(l.chunks);
  nlohmann::json j = {{"n_scored", r.n_scored},
                      {"n_flips", r.flips.size()},
                      {"median_margin_flipped", r.median_margin_flipped},
                      {"median_margin_all", r.median_margin_all},
                      {"grows_most_at_layer", r.grows_most_at},
                      {"carried_most_by", r.carried_most_by}};
  j["flips"] = nlohmann::json::array();
  for (const auto& f : r.flips) {
    j["flips"].push_back({{"chunk", f.chunk}, {"pos", f.pos}, {"target", f.target},
                          {"top_a", f.top_a}, {"top_b", f.top_b}, {"p_top_a", f.p_top_a},
                          {"margin_a", f.margin_a}, {"kl", f.kl}});
  }
  j["layers"] = nlohmann::json::array();
  for (const auto& fl : r.layers) {
    j["layers"].push_back({{"layer", fl.layer}, {"rel_err_flipped", fl.rel_err_flipped},
                           {"rel_err_other", fl.rel_err_other}});
  }
  j["denoise"] = nlohmann::json::array();
  for (const auto& d : r.denoise) j["denoise"].push_back({{"point", d.point}, {"kl_flipped", d.kl_flipped}});
  return j;
}

}  // namespace hd::report
