// The routing analysis: at every MoE layer and scored position, how B's routing differs from
// A's, and how each arm's differs from its own re-split (the floors), summarized per layer with
// intervals, read against the larger floor, and per position against the output KL.
#include "analysis/routing.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "analysis/against_floor.h"
#include "analysis/stats.h"

namespace hd::analysis {
namespace {

enum Col { kPair, kLayer, kPos, kSet, kTop1, kJaccard, kRouterKl, kMoved, kMargin, kOutKl };

// One arm's routing at one layer over the chunk, and one position's Route from it.
struct LayerRoutes {
  ChunkInput::Rows probs, experts, weights;
  bool empty() const { return probs.data.empty(); }
  Route at(int pos) const {
    auto row = [pos](const ChunkInput::Rows& r) {
      const auto w = static_cast<size_t>(r.width);
      if (pos < r.first_pos || (static_cast<size_t>(pos - r.first_pos) + 1) * w > r.data.size()) {
        throw std::invalid_argument("a routing point has no row for a scored position");
      }
      return r.data.subspan(static_cast<size_t>(pos - r.first_pos) * w, w);
    };
    return {row(probs), row(experts), row(weights)};
  }
};

LayerRoutes routes_of(const ChunkInput& in, char arm, size_t layer) {
  const ModelPoints& m = *in.points;
  return {in.captured(arm, m.router[layer]), in.captured(arm, m.route_experts[layer]),
          in.captured(arm, m.route_weights[layer])};
}

class Routing final : public ChunkAnalysis {
 public:
  std::string name() const override { return "routing"; }
  std::string description() const override {
    return "MoE routing per layer and position: expert changes, router KL, weight moved, with "
           "the floor (diff --routing)";
  }
  std::string unavailable(const ModelPoints& m) const override { return m.no_routing; }
  std::vector<std::string> points(const ModelPoints& m) const override {
    std::vector<std::string> p;
    for (int l : routed_layers(m)) {
      const auto i = static_cast<size_t>(l);
      p.insert(p.end(), {m.router[i], m.route_experts[i], m.route_weights[i]});
    }
    return p;
  }
  std::vector<ColumnDef> columns() const override {
    using T = ColumnDef::Type;
    return {{"pair", T::kText,
             "b: A vs B; floor: A vs A re-split; floor_b: B vs B re-split (there the *_a "
             "columns are B's)"},
            {"layer", T::kInteger, "the MoE layer"},
            {"pos", T::kInteger, "the scored position"},
            {"set_changed", T::kInteger, "1 where the other arm chose another set of experts"},
            {"top1_changed", T::kInteger, "1 where its best expert differs"},
            {"jaccard", T::kReal, "|A ∩ X| / |A ∪ X| of the two sets"},
            {"router_kl", T::kReal, "KL(A || X) over the router's probabilities, each normalized"},
            {"weight_moved", T::kReal, "half the L1 distance of the mixing weights over experts"},
            {"margin_a", T::kReal, "A's weakest chosen minus strongest unchosen probability"},
            {"out_kl", T::kReal, "the output KL(A || X) at the position"},
            {"experts_a", T::kText, "A's experts, best first"},
            {"experts_x", T::kText, "the other arm's experts, best first"}};
  }

  std::vector<CellRow> compute(const ChunkInput& in) const override {
    std::vector<CellRow> rows;
    // (the arm read against, the other arm, pair, the comparison whose positions are scored)
    for (const auto& [base, arm, pair, cmp] :
         {std::tuple{'a', 'b', "b", in.diff}, {'a', 'f', "floor", in.floor},
          {'b', 'g', "floor_b", in.floor_b}}) {
      if (cmp == nullptr) continue;
      for (int l : routed_layers(*in.points)) {
        const LayerRoutes a = routes_of(in, base, static_cast<size_t>(l));
        const LayerRoutes x = routes_of(in, arm, static_cast<size_t>(l));
        if (x.empty()) continue;
        for (const auto& p : cmp->positions) {
          if (!p.scored) continue;
          const Route ra = a.at(p.pos), rx = x.at(p.pos);
          const RouteChange c = compare_routes(ra, rx, in.points->router_logits);
          rows.push_back({std::string(pair), int64_t{l}, int64_t{p.pos}, int64_t{c.set_changed},
                          int64_t{c.top1_changed}, c.jaccard, c.router_kl, c.weight_moved,
                          c.margin_a, p.score.kl, experts_text(ra.experts),
                          experts_text(rx.experts)});
        }
      }
    }
    return rows;
  }

  SummaryTable summarize(const std::vector<StoredRow>& rows) const override;
  Shortcut shortcut() const override { return routing_shortcut("routing", kRoutingHelp); }
  bool draws_map() const override { return true; }
  std::vector<std::string> map(const std::vector<StoredRow>& rows) const override {
    return routing_map(rows);
  }
};

// Values of one column with their chunks, for cluster_mean.
struct Series {
  std::vector<double> v;
  std::vector<int> chunk;
  void add(double x, int c) {
    v.push_back(x);
    chunk.push_back(c);
  }
  MeanCI mean() const { return cluster_mean(v, chunk); }
  RateCI rate() const { return cluster_rate(v, chunk); }
};

struct LayerSeries {
  Series set, top1, jaccard, router_kl, moved, margin, margin_changed;
  Series floor_set[2], floor_kl[2];  // A vs A′, B vs B′
};

// Per position of A vs B: whether any layer changed its experts, the first that did, its KL.
struct PositionRouting {
  int first_changed = -1;
  double out_kl = 0;
  int chunk = 0;
};

void position_notes(const std::map<std::pair<int, int>, PositionRouting>& positions,
                    SummaryTable& t) {
  Series changed_kl, kept_kl;
  std::map<int, int> first;
  for (const auto& [key, p] : positions) {
    (p.first_changed >= 0 ? changed_kl : kept_kl).add(p.out_kl, p.chunk);
    if (p.first_changed >= 0) ++first[p.first_changed];
  }
  const size_t n = positions.size(), changed = changed_kl.v.size();
  // A mean over no position is none, and one chunk gives no interval: said, not "nan".
  const auto kl = [](const Series& s) {
    if (s.v.empty()) return std::string("none");
    const MeanCI m = s.mean();
    return std::isnan(m.ci95) ? fmt::format("{:.4g} (no interval: 1 chunk)", m.mean)
                              : fmt::format("{:.4g} ± {:.3g}", m.mean, m.ci95);
  };
  t.notes.push_back(fmt::format(
      "positions whose experts changed at some MoE layer: {} of {} ({:.4g} %); output KL there "
      "{}, elsewhere {}",
      changed, n, n ? 100.0 * static_cast<double>(changed) / static_cast<double>(n) : 0.0,
      kl(changed_kl), kl(kept_kl)));
  if (!first.empty()) {
    std::string list;
    for (const auto& [layer, count] : first) {
      list += fmt::format("{}layer {}: {}", list.empty() ? "" : ", ", layer, count);
    }
    t.notes.push_back("the first MoE layer whose experts changed, by positions: " + list);
  }
}

// Which floor a layer is read against: the one that changes more expert sets (A's on a tie).
size_t larger_floor(const Series (&floor)[2]) {
  if (floor[1].v.empty()) return 0;
  if (floor[0].v.empty()) return 1;
  return floor[1].rate().rate > floor[0].rate().rate ? 1 : 0;
}

std::string floor_name(const Series (&floor)[2], size_t f) {
  if (floor[f].v.empty()) return "";
  return f == 0 ? "A vs A′" : "B vs B′";
}

std::string overall_note(const RateCI& b, const RateCI& floor, const std::string& name,
                         size_t within, size_t layers) {
  std::string s = fmt::format("B changes {:.3g} % of expert choices", 100 * b.rate);
  if (floor.n == 0) return s + " (no floor measured)";
  s += fmt::format("; the floor ({}) changes {:.3g} %", name, 100 * floor.rate);
  if (within > 0) s += fmt::format("; {} of {} MoE layers do not clear the floor", within, layers);
  return s;
}

SummaryTable Routing::summarize(const std::vector<StoredRow>& rows) const {
  std::map<int, LayerSeries> layers;
  std::map<std::pair<int, int>, PositionRouting> positions;  // (chunk, pos), A vs B
  std::set<int> chunks;
  bool have_floor = false;
  Series all_set, all_floor[2];  // every MoE layer pooled
  for (const auto& r : rows) {
    const auto& c = r.cells;
    const int layer = static_cast<int>(std::get<int64_t>(c.at(kLayer)));
    const bool changed = std::get<int64_t>(c.at(kSet)) != 0;
    LayerSeries& s = layers[layer];
    chunks.insert(r.chunk);
    const std::string& pair = std::get<std::string>(c.at(kPair));
    if (pair == "floor" || pair == "floor_b") {
      have_floor = true;
      const size_t arm = pair == "floor" ? 0 : 1;
      s.floor_set[arm].add(changed, r.chunk);
      s.floor_kl[arm].add(cell_real(c.at(kRouterKl)), r.chunk);
      all_floor[arm].add(changed, r.chunk);
      continue;
    }
    all_set.add(changed, r.chunk);
    s.set.add(changed, r.chunk);
    s.top1.add(cell_real(c.at(kTop1)), r.chunk);
    s.jaccard.add(cell_real(c.at(kJaccard)), r.chunk);
    s.router_kl.add(cell_real(c.at(kRouterKl)), r.chunk);
    s.moved.add(cell_real(c.at(kMoved)), r.chunk);
    const double margin = cell_real(c.at(kMargin));
    if (std::isfinite(margin)) {
      s.margin.add(margin, r.chunk);
      if (changed) s.margin_changed.add(margin, r.chunk);
    }
    auto& p = positions[{r.chunk, static_cast<int>(std::get<int64_t>(c.at(kPos)))}];
    p.chunk = r.chunk;
    p.out_kl = cell_real(c.at(kOutKl));
    if (changed && (p.first_changed < 0 || layer < p.first_changed)) p.first_changed = layer;
  }
  SummaryTable t;
  t.title = "MoE routing, A vs B, per layer (means over scored positions)";
  t.columns = {"layer",        "positions", "experts changed (95 %)", "top-1 changed (95 %)",
               "Jaccard",      "router KL", "weight moved",    "margin where changed",
               "margin",       "floor changed (95 %)", "floor of", "floor router KL",
               "against the floor"};
  const auto m = [](const Series& x) { return x.v.empty() ? NAN : x.mean().mean; };
  size_t within = 0;
  for (const auto& [layer, s] : layers) {
    const size_t f = larger_floor(s.floor_set);
    const RateCI floor = s.floor_set[f].rate();
    const std::string standing = rate_standing_text(s.set.rate(), floor);
    within += standing == kBelowFloor ? 1 : 0;
    t.rows.push_back({int64_t{layer}, static_cast<int64_t>(s.set.v.size()), s.set.rate(),
                      s.top1.rate(), m(s.jaccard), m(s.router_kl), m(s.moved),
                      m(s.margin_changed), m(s.margin), floor, floor_name(s.floor_set, f),
                      m(s.floor_kl[f]), standing});
  }
  if (!all_set.v.empty()) {
    const size_t f = larger_floor(all_floor);
    t.notes.push_back(overall_note(all_set.rate(), all_floor[f].rate(), floor_name(all_floor, f),
                                   within, layers.size()));
  }
  position_notes(positions, t);
  t.notes.push_back(fmt::format("intervals: 95 %, cluster-robust over {} chunks", chunks.size()));
  t.notes.push_back(
      "margin: A's probability of its weakest chosen expert minus its strongest unchosen one");
  if (!have_floor) t.notes.push_back("no floor: the run was made with --no-floor");
  return t;
}

}  // namespace

std::unique_ptr<ChunkAnalysis> make_routing_analysis() { return std::make_unique<Routing>(); }

}  // namespace hd::analysis
