// The routing_transplant analysis: B run again with A's routing (its experts and its mixing
// weights) written at every MoE layer, then at each MoE layer alone; and A with B's. What KL is
// left says how much of the divergence routing changes cause:
//   KL(A || B) - KL(A || B with A's routing)  is the part routing changes cause;
//   KL(A || A with B's routing)               is what B's routing alone does to A.
// The rest is the experts' and the dense parts' own numerics. 2 × (1 + MoE layers) passes a chunk.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "analysis/kl.h"
#include "analysis/routing.h"
#include "analysis/stats.h"

namespace hd::analysis {
namespace {

constexpr const char* kDenoise = "b_with_a";  // B with A's routing
constexpr const char* kNoise = "a_with_b";    // A with B's routing

class RoutingTransplant final : public ChunkAnalysis {
 public:
  std::string name() const override { return "routing_transplant"; }
  std::string description() const override {
    return "MoE routing transplant: the KL left with the other arm's experts and weights "
           "written in (diff --routing-transplant)";
  }
  std::string unavailable(const ModelPoints& m) const override { return m.no_routing_transplant; }
  std::vector<std::string> points(const ModelPoints& m) const override {
    std::vector<std::string> p;
    for (int l : routed_layers(m)) {
      p.push_back(m.route_experts[static_cast<size_t>(l)]);
      p.push_back(m.route_weights[static_cast<size_t>(l)]);
    }
    return p;
  }
  std::vector<ColumnDef> columns() const override {
    using T = ColumnDef::Type;
    return {{"direction", T::kText, "b_with_a: B with A's routing; a_with_b: A with B's"},
            {"layer", T::kInteger, "the MoE layer written, -1 for every MoE layer at once"},
            {"pos", T::kInteger, "the scored position"},
            {"kl", T::kReal, "KL(A || the arm run with the other's routing)"},
            {"kl_ab", T::kReal, "KL(A || B) at the position, as the diff measured it"}};
  }

  std::vector<CellRow> compute(const ChunkInput& in) const override {
    std::vector<CellRow> rows;
    std::vector<int> targets = {-1};
    for (int l : routed_layers(*in.points)) targets.push_back(l);
    const auto v = static_cast<size_t>(in.n_vocab);
    ScoreScratch scratch;
    for (const char* direction : {kDenoise, kNoise}) {
      for (int layer : targets) {
        std::vector<std::string> written;
        for (int l : routed_layers(*in.points)) {
          if (layer >= 0 && l != layer) continue;
          written.push_back(in.points->route_experts[static_cast<size_t>(l)]);
          written.push_back(in.points->route_weights[static_cast<size_t>(l)]);
        }
        const auto logits = in.rerun(direction == kDenoise ? 'b' : 'a', written);
        for (const auto& p : in.diff->positions) {
          if (!p.scored) continue;
          const size_t i = static_cast<size_t>(p.pos - in.first_output);
          const double kl = kl_divergence(in.logits_a.subspan(i * v, v),
                                          logits.subspan(i * v, v), scratch);
          rows.push_back({std::string(direction), int64_t{layer}, int64_t{p.pos}, kl, p.score.kl});
        }
      }
    }
    return rows;
  }

  SummaryTable summarize(const std::vector<StoredRow>& rows) const override;
  Shortcut shortcut() const override {
    return routing_shortcut(
        "routing-transplant",
        "MoE models: run each arm again with the other's experts and mixing weights, at every "
        "MoE layer and at each alone: the KL routing causes (--analysis routing_transplant)");
  }
};

struct Sums {
  std::map<int, double> kl, kl_ab, n;  // per chunk
  void add(int chunk, double k, double k_ab) {
    kl[chunk] += k;
    kl_ab[chunk] += k_ab;
    n[chunk] += 1;
  }
  static MeanCI of(const std::map<int, double>& sums, const std::map<int, double>& n) {
    std::vector<double> s, c;
    for (const auto& [chunk, x] : sums) {
      s.push_back(x);
      c.push_back(n.at(chunk));
    }
    return cluster_mean_of_totals(s, c);
  }
};

SummaryTable RoutingTransplant::summarize(const std::vector<StoredRow>& rows) const {
  std::map<int, Sums> denoise, noise;  // by layer (-1: every MoE layer)
  for (const auto& r : rows) {
    const bool d = std::get<std::string>(r.cells.at(0)) == kDenoise;
    (d ? denoise : noise)[static_cast<int>(std::get<int64_t>(r.cells.at(1)))].add(
        r.chunk, std::get<double>(r.cells.at(3)), std::get<double>(r.cells.at(4)));
  }
  SummaryTable t;
  t.title = "MoE routing transplant: the KL that is left with the other arm's routing";
  t.columns = {"written at",  "KL(A‖B)", "KL(A‖B with A's routing)", "±95%",
               "explained by routing", "KL(A‖A with B's routing)", "±95%"};
  for (const auto& [layer, s] : denoise) {
    const MeanCI ab = Sums::of(s.kl_ab, s.n), left = Sums::of(s.kl, s.n);
    MeanCI back;
    if (noise.count(layer)) back = Sums::of(noise.at(layer).kl, noise.at(layer).n);
    t.rows.push_back({layer < 0 ? std::string("every MoE layer") : fmt::format("layer {}", layer),
                      ab.mean, left.mean, left.ci95, ab.mean > 0 ? (ab.mean - left.mean) / ab.mean : NAN,
                      noise.count(layer) ? back.mean : NAN, noise.count(layer) ? back.ci95 : NAN});
  }
  t.notes.push_back("explained by routing: (KL(A‖B) − KL(A‖B with A's routing)) / KL(A‖B); the "
                    "rest is the experts' and the dense parts' own numerics");
  t.notes.push_back("intervals: 95 %, cluster-robust over chunks");
  return t;
}

}  // namespace

std::unique_ptr<ChunkAnalysis> make_routing_transplant_analysis() {
  return std::make_unique<RoutingTransplant>();
}

}  // namespace hd::analysis
