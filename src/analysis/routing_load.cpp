// The routing_load analysis: how many scored tokens each arm sends to each expert of each MoE
// layer (a token counts once for each expert it is sent to), and how that load changes.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <stdexcept>

#include "analysis/routing.h"

namespace hd::analysis {
namespace {

class RoutingLoad final : public ChunkAnalysis {
 public:
  std::string name() const override { return "routing_load"; }
  std::string description() const override {
    return "MoE expert load per layer: tokens per expert in each arm (diff --routing)";
  }
  std::string unavailable(const ModelPoints& m) const override { return m.no_routing; }
  std::vector<std::string> points(const ModelPoints& m) const override {
    std::vector<std::string> p;
    for (int l : routed_layers(m)) p.push_back(m.route_experts[static_cast<size_t>(l)]);
    return p;
  }
  std::vector<ColumnDef> columns() const override {
    using T = ColumnDef::Type;
    return {{"layer", T::kInteger, "the MoE layer"},
            {"expert", T::kInteger, "the expert"},
            {"tokens_a", T::kInteger, "scored tokens of the chunk A sends to it"},
            {"tokens_b", T::kInteger, "scored tokens B sends to it"}};
  }

  std::vector<CellRow> compute(const ChunkInput& in) const override {
    std::vector<CellRow> rows;
    for (int l : routed_layers(*in.points)) {
      const std::string& point = in.points->route_experts[static_cast<size_t>(l)];
      const int64_t n_expert = in.points->n_expert;  // the survey's, on every routing layer
      std::vector<int64_t> load_a(static_cast<size_t>(n_expert)), load_b(load_a);
      for (auto [arm, load] : {std::pair{'a', &load_a}, {'b', &load_b}}) {
        const ChunkInput::Rows r = in.captured(arm, point);
        const auto w = static_cast<size_t>(r.width);
        for (const auto& p : in.diff->positions) {
          if (!p.scored) continue;
          if (p.pos < r.first_pos || static_cast<size_t>(p.pos - r.first_pos + 1) * w > r.data.size()) {
            throw std::invalid_argument("a routing point has no row for a scored position");
          }
          const size_t row = static_cast<size_t>(p.pos - r.first_pos);
          for (float e : r.data.subspan(row * w, w)) {
            const auto id = static_cast<int64_t>(e);
            if (id >= 0 && id < n_expert) ++(*load)[static_cast<size_t>(id)];
          }
        }
      }
      for (int64_t e = 0; e < n_expert; ++e) {
        rows.push_back({int64_t{l}, e, load_a[static_cast<size_t>(e)], load_b[static_cast<size_t>(e)]});
      }
    }
    return rows;
  }

  SummaryTable summarize(const std::vector<StoredRow>& rows) const override;
  Shortcut shortcut() const override { return routing_shortcut("routing", kRoutingHelp); }
};

SummaryTable RoutingLoad::summarize(const std::vector<StoredRow>& rows) const {
  std::map<int, std::map<int64_t, std::pair<int64_t, int64_t>>> load;  // layer → expert → (A, B)
  for (const auto& r : rows) {
    auto& l = load[static_cast<int>(std::get<int64_t>(r.cells.at(0)))][std::get<int64_t>(r.cells.at(1))];
    l.first += std::get<int64_t>(r.cells.at(2));
    l.second += std::get<int64_t>(r.cells.at(3));
  }
  SummaryTable t;
  t.title = "MoE expert load per layer (tokens sent to each expert, summed over chunks)";
  t.columns = {"layer", "experts", "assignments", "moved", "busiest in A", "its share",
               "busiest in B", "its share", "most changed", "A → B"};
  for (const auto& [layer, experts] : load) {
    int64_t total = 0, moved = 0;
    int64_t busiest_a = experts.begin()->first, busiest_b = busiest_a, changed = busiest_a;
    for (const auto& [e, ab] : experts) {
      total += ab.first;
      moved += std::llabs(ab.first - ab.second);
      if (ab.first > experts.at(busiest_a).first) busiest_a = e;
      if (ab.second > experts.at(busiest_b).second) busiest_b = e;
      const auto& c = experts.at(changed);
      if (std::llabs(ab.first - ab.second) > std::llabs(c.first - c.second)) changed = e;
    }
    const auto share = [total](int64_t n) {
      return total > 0 ? static_cast<double>(n) / static_cast<double>(total) : NAN;
    };
    t.rows.push_back({int64_t{layer}, static_cast<int64_t>(experts.size()), total,
                      share(moved / 2), busiest_a, share(experts.at(busiest_a).first), busiest_b,
                      share(experts.at(busiest_b).second), changed,
                      fmt::format("{} → {}", experts.at(changed).first, experts.at(changed).second)});
  }
  t.notes.push_back("moved: the share of token-to-expert assignments B makes elsewhere (half the "
                    "L1 distance of the two loads); every expert's load is in the stored rows");
  return t;
}

}  // namespace

std::unique_ptr<ChunkAnalysis> make_routing_load_analysis() {
  return std::make_unique<RoutingLoad>();
}

}  // namespace hd::analysis
