#include "report/transplants.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "errors.h"
#include "report/figures.h"
#include "report/noise_floor.h"

namespace hd::report {

using analysis::MeanCI;


static nlohmann::json interval(const MeanCI& m) {
  if (std::isnan(m.ci95)) return {nullptr, nullptr};
  return {m.mean - m.ci95, m.mean + m.ci95};
}

// A value and, after it, what its interval says against the KL floor (analysis/against_floor).
static std::string read(const MeanCI& m, const analysis::FloorRef& floor_hi, size_t width = 26) {
  const std::string says = analysis::standing_text(analysis::standing(m, floor_hi));
  const std::string v = with_ci(m);
  if (says.empty()) return v;
  return fmt::format("{:<{}} ({})", v, width, says);
}

void print_transplants(std::ostream& os, const analysis::TransplantSummary& s, const analysis::FloorRef& floor_hi) {
  os << "\n  transplants: mean KL(A‖·) over scored positions after restoring each point\n";
  os << "    denoise: B's pass with A's tensor written there (falls to what the rest adds)\n";
  os << "    noise:   A's pass with B's tensor written there (rises to what the prefix carries)\n";
  os << fmt::format("  {:<12} {:<52} {}\n", "point", "denoise", "noise");
  for (size_t i = 0; i < s.denoise.size(); ++i) {
    os << fmt::format("  {:<12} {:<52} {}\n", s.denoise[i].point,
                      read(s.denoise[i].kl, floor_hi), read(s.noise[i].kl, floor_hi));
  }
}

static void print_direction(std::ostream& os, const char* name,
                            const analysis::DirectionComponents& c, const analysis::FloorRef& floor_hi) {
  os << fmt::format("\n  {}: untouched {}  final {}  (steps sum to {})\n", name, num(c.untouched),
                    num(c.final),
                    std::string(name) == "denoise" ? "untouched − final" : "final − untouched");
  os << fmt::format("  {:>9}  {:<52} {}\n", "", "attention", "MLP");
  os << fmt::format("  {:>9}  {:<52}\n", "embedding", read(c.embedding, floor_hi));
  for (const auto& l : c.layers) {
    os << fmt::format("  {:>9}  {:<52} {}\n", fmt::format("layer {}", l.layer),
                      read(l.attention, floor_hi), read(l.mlp, floor_hi));
  }
  os << fmt::format("  {:>9}  {:<52} {}\n", "total", read(c.attention_total, floor_hi),
                    read(c.mlp_total, floor_hi));
  os << fmt::format(
      "  attention − MLP (paired): {}   attention's share per chunk: {:.2f} – {:.2f}\n",
      with_ci(c.paired_diff), c.attention_share_min, c.attention_share_max);
}

void print_components(std::ostream& os, const analysis::TransplantSummary& s, const analysis::FloorRef& floor_hi) {
  if (!s.has_components) {
    os << "\n  components: not measured (run diff with --components)\n";
    return;
  }
  os << "\n  components: the change in KL across each block, positive = the block carries "
        "divergence\n";
  print_direction(os, "denoise", s.denoise_components, floor_hi);
  print_direction(os, "noise", s.noise_components, floor_hi);
}

Position parse_position(const std::string& where) {
  const auto whole_number = [](const std::string& s, int& out) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
      return false;
    out = std::stoi(s);
    return true;
  };
  const auto colon = where.find(':');
  Position p;
  if (colon == std::string::npos || !whole_number(where.substr(0, colon), p.chunk) ||
      !whole_number(where.substr(colon + 1), p.pos)) {
    throw InputError("--position wants CHUNK:POS, e.g. 3:57, not '" + where + "'");
  }
  return p;
}

void print_position(std::ostream& os, const Loaded& l, const Position& where) {
  const int chunk = where.chunk, pos = where.pos;
  for (const auto& c : l.chunks) {
    if (c.chunk != chunk) continue;
    const auto row = std::find_if(c.diff.positions.begin(), c.diff.positions.end(),
                                  [pos](const analysis::PositionRow& r) { return r.pos == pos; });
    if (row == c.diff.positions.end() || !row->scored) break;
    print_position_row(os, l, c, *row);  // the token, its context and both top-5 first
    const auto trace = c.transplants ? analysis::position_trace(c, pos) : std::nullopt;
    if (!trace || std::isnan(trace->denoise[0])) {
      os << "\n  (no transplants at this position: run diff with --transplants)\n";
      return;
    }
    os << fmt::format("\n  after each restore point:\n  {:<12} {:>12} {:>12}\n", "point",
                      "denoise", "noise");
    for (size_t k = 0; k < trace->points.size(); ++k) {
      os << fmt::format("  {:<12} {:>12} {:>12}\n", trace->points[k], num(trace->denoise[k]),
                        num(trace->noise[k]));
    }
    return;
  }
  throw InputError("no scored position " + std::to_string(chunk) + ":" + std::to_string(pos) +
                   " is stored (C:P counts P as the position whose logits predict token P + 1, "
                   "as --worst, export and the report do)");
}

static nlohmann::json curve_json(const std::vector<analysis::CurvePoint>& c, const analysis::FloorRef& floor_hi) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& p : c)
    a.push_back({{"point", p.point},
                 {"kl_mean", p.kl.mean},
                 {"kl_ci95", interval(p.kl)},
                 {"standing", standing_json(analysis::standing(p.kl, floor_hi))}});
  return a;
}

static nlohmann::json components_json(const analysis::DirectionComponents& c, const analysis::FloorRef& floor_hi) {
  const auto says = [floor_hi](const MeanCI& m) {
    return standing_json(analysis::standing(m, floor_hi));
  };
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : c.layers) {
    layers.push_back({{"layer", l.layer},
                      {"attention", l.attention.mean},
                      {"attention_ci95", interval(l.attention)},
                      {"attention_standing", says(l.attention)},
                      {"mlp", l.mlp.mean},
                      {"mlp_ci95", interval(l.mlp)},
                      {"mlp_standing", says(l.mlp)}});
  }
  return {{"untouched", c.untouched},
          {"final", c.final},
          {"embedding", c.embedding.mean},
          {"embedding_ci95", interval(c.embedding)},
          {"embedding_standing", says(c.embedding)},
          {"layers", layers},
          {"attention_total", c.attention_total.mean},
          {"attention_total_ci95", interval(c.attention_total)},
          {"attention_total_standing", says(c.attention_total)},
          {"mlp_total", c.mlp_total.mean},
          {"mlp_total_ci95", interval(c.mlp_total)},
          {"mlp_total_standing", says(c.mlp_total)},
          {"paired_diff", c.paired_diff.mean},
          {"paired_diff_ci95", interval(c.paired_diff)},
          {"attention_share_min", c.attention_share_min},
          {"attention_share_max", c.attention_share_max}};
}

void add_transplants_json(nlohmann::json& j, const analysis::TransplantSummary& s,
                          const analysis::FloorRef& floor_hi) {
  j["transplants"] = {{"denoise", curve_json(s.denoise, floor_hi)},
                      {"noise", curve_json(s.noise, floor_hi)}};
  if (s.has_components) {
    j["components"] = {{"denoise", components_json(s.denoise_components, floor_hi)},
                       {"noise", components_json(s.noise_components, floor_hi)}};
  }
}

}  // namespace hd::report
