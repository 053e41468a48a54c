// The summary of a sweep: per combination the mean KL with its interval, top-1 change and PPL;
// main effects, pairwise interactions and Shapley values per chunk, each then averaged over
// chunks with its interval; the floor.
#include "kinds/sweep/sweep_summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "analysis/against_floor.h"
#include "analysis/attribution.h"
#include "analysis/stats.h"
#include "common/json_number.h"
#include "errors.h"
#include "kinds/sweep/sweep.h"

namespace hd::run {

namespace {

using store::SweepArmRows;
using store::SweepChunkRows;

// A mean with its interval over chunks: one value per chunk, each its own cluster.
analysis::MeanCI over_chunks(const std::vector<double>& per_chunk) {
  std::vector<int> cluster(per_chunk.size());
  for (size_t i = 0; i < cluster.size(); ++i) cluster[i] = static_cast<int>(i);
  return analysis::cluster_mean(per_chunk, cluster);
}

const SweepArmRows& ran(const std::optional<SweepArmRows>& rows, size_t mask) {
  if (!rows) throw InputError("sweep rows of combination " + std::to_string(mask) + " are missing");
  return *rows;
}

// The combinations with their statistics over every scored position; v[chunk][mask] gets each
// chunk's mean KL(A || combination), NaN where it cannot run.
nlohmann::json combination_rows(const nlohmann::json& combinations,
                                const std::vector<SweepChunkRows>& chunks,
                                std::vector<std::vector<double>>& v) {
  const size_t G = chunks.size(), n_comb = v.empty() ? 0 : v[0].size();
  nlohmann::json combos = nlohmann::json::array();
  std::vector<double> nll_a;
  std::vector<int> nll_a_cluster;
  for (size_t g = 0; g < G; ++g) {
    for (double x : chunks[g].nll_a) nll_a.push_back(x), nll_a_cluster.push_back(int(g));
    v[g][0] = 0;  // A against its own logits
  }
  for (size_t m = 0; m < n_comb; ++m) {
    nlohmann::json row = combinations.at(m);
    if (m == 0) {
      row.update({{"kl_mean", 0.0}, {"kl_ci95", 0.0}, {"top1_change_rate", 0.0}});
    } else if (row["possible"].get<bool>()) {
      std::vector<double> kl, nll;
      std::vector<int> cluster;
      size_t flips = 0;
      for (size_t g = 0; g < G; ++g) {
        const SweepArmRows& c = ran(chunks[g].combos.at(m - 1), m);
        double sum = 0;
        for (double x : c.kl) kl.push_back(x), sum += x, cluster.push_back(int(g));
        for (double x : c.nll) nll.push_back(x);
        flips += static_cast<size_t>(c.flips);
        v[g][m] = sum / static_cast<double>(c.kl.size());
      }
      const auto mk = analysis::cluster_mean(kl, cluster);
      const auto mn = analysis::cluster_mean(nll, cluster);
      row.update({{"kl_mean", mk.mean},
                  {"kl_ci95", json_number(mk.ci95)},
                  {"top1_change_rate", static_cast<double>(flips) / static_cast<double>(kl.size())},
                  {"ppl", std::exp(mn.mean)}});
    }
    combos.push_back(row);
  }
  combos[0]["ppl"] = std::exp(analysis::cluster_mean(nll_a, nll_a_cluster).mean);
  return combos;
}

// One floor's statistics (null without it); `hi` gets the upper end of its interval (0 when it
// is bitwise: a floor of exactly 0 puts nothing below it).
nlohmann::json one_floor(const std::vector<SweepChunkRows>& chunks,
                         const std::optional<store::SweepArmRows> SweepChunkRows::*which,
                         double& hi) {
  hi = std::numeric_limits<double>::quiet_NaN();
  if (!(chunks[0].*which)) return nullptr;
  std::vector<double> kl;
  std::vector<int> cluster;
  size_t flips = 0;
  bool bitwise = true;
  for (size_t g = 0; g < chunks.size(); ++g) {
    if (!(chunks[g].*which)) throw InputError("the floor rows of a sweep chunk are missing");
    for (double x : (chunks[g].*which)->kl) {
      kl.push_back(x), cluster.push_back(int(g));
      bitwise = bitwise && x == 0;
    }
    flips += static_cast<size_t>((chunks[g].*which)->flips);
  }
  const auto m = analysis::cluster_mean(kl, cluster);
  hi = bitwise ? 0 : analysis::upper_end(m);
  return {{"kl_mean", m.mean},
          {"kl_ci95", json_number(m.ci95)},
          {"top1_change_rate", static_cast<double>(flips) / static_cast<double>(kl.size())}};
}

// "floor": the larger of A's and B's floors (by mean KL; A's alone in sweeps from before B's),
// with both as floor_a and floor_b; `floor_hi` gets the larger upper end (NaN without a floor).
nlohmann::json floor_row(const std::vector<SweepChunkRows>& chunks, double& floor_hi) {
  double hi_a = 0, hi_b = 0;
  const nlohmann::json a = one_floor(chunks, &SweepChunkRows::floor, hi_a);
  const nlohmann::json b = one_floor(chunks, &SweepChunkRows::floor_b, hi_b);
  floor_hi = std::isnan(hi_b) ? hi_a : std::max(hi_a, hi_b);
  if (a.is_null()) return nullptr;
  nlohmann::json larger = !b.is_null() && b["kl_mean"].get<double>() > a["kl_mean"].get<double>()
                              ? b
                              : a;
  larger["floor_a"] = a;
  larger["floor_b"] = b;
  return larger;
}

// "a+b" for a player of several settings.
std::vector<std::string> player_names(const std::vector<unsigned>& players,
                                      const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (unsigned p : players) {
    std::string name;
    for (size_t i = 0; i < names.size(); ++i) {
      if (!(p & (1u << i))) continue;
      if (!name.empty()) name += '+';
      name += names[i];
    }
    out.push_back(name);
  }
  return out;
}

// Main effects, interactions and Shapley values: per chunk, then each quantity's mean and
// interval over chunks, written into `out`.
void attribution(const std::vector<std::vector<double>>& v, const std::vector<std::string>& names,
                 const std::vector<unsigned>& players, const std::vector<std::string>& pnames,
                 double floor_hi, nlohmann::json& out) {
  const size_t G = v.size(), k = names.size();
  std::vector<analysis::Attribution> per(G), per_player(G);
  for (size_t g = 0; g < G; ++g) {
    per[g] = analysis::attribute(v[g]);
    per_player[g] = analysis::attribute(analysis::player_values(v[g], players));
  }
  auto across = [&](const std::vector<analysis::Attribution>& from, auto get) {
    std::vector<double> xs(G);
    for (size_t g = 0; g < G; ++g) xs[g] = get(from[g]);
    return over_chunks(xs);
  };
  nlohmann::json main = nlohmann::json::object(), main_ci = nlohmann::json::object(),
                 shapley = nlohmann::json::object(), shapley_ci = nlohmann::json::object(),
                 interactions = nlohmann::json::array(), includes_zero = nlohmann::json::array(),
                 below_floor = nlohmann::json::array();
  for (size_t i = 0; i < k; ++i) {
    const auto me = across(per, [i](const analysis::Attribution& at) { return at.main[i].value; });
    main[names[i]] = json_number(me.mean);
    main_ci[names[i]] = json_number(me.ci95);
    for (size_t j = i + 1; j < k; ++j) {
      const auto in = across(
          per, [i, j](const analysis::Attribution& at) { return at.interaction[i][j].value; });
      interactions.push_back({{"settings", {names[i], names[j]}},
                              {"value", json_number(in.mean)},
                              {"ci95", json_number(in.ci95)}});
    }
  }
  for (size_t p = 0; p < players.size(); ++p) {
    const auto sh =
        across(per_player, [p](const analysis::Attribution& at) { return at.shapley[p]; });
    shapley[pnames[p]] = json_number(sh.mean);
    shapley_ci[pnames[p]] = json_number(sh.ci95);
    // Two statements, never one: a floor of 0 puts nothing below it, yet the interval of a
    // value can still reach 0.
    const analysis::Standing st = analysis::standing(sh, floor_hi);
    if (st.includes_zero) includes_zero.push_back(pnames[p]);
    if (st.below_floor) below_floor.push_back(pnames[p]);
  }
  out["main_effects"] = main;
  out["main_effects_ci95"] = main_ci;
  out["interactions"] = interactions;
  out["shapley"] = shapley;
  out["shapley_ci95"] = shapley_ci;
  out["interval_includes_0"] = includes_zero;
  out["below_floor"] = below_floor;
}

}  // namespace

nlohmann::json sweep_summary(const nlohmann::json& config,
                             const std::vector<SweepChunkRows>& chunks,
                             const nlohmann::json& combinations) {
  const engine::ArmSettings a = arm_settings_from_json(config.at("a"));
  const engine::ArmSettings b = arm_settings_from_json(config.at("b"));
  const std::vector<std::string> names = differing_settings(a, b);
  const size_t n_comb = size_t{1} << names.size(), G = chunks.size();
  if (G == 0) throw InputError("the sweep has no finished chunk");
  std::vector<std::vector<double>> v(
      G, std::vector<double>(n_comb, std::numeric_limits<double>::quiet_NaN()));
  const nlohmann::json combos = combination_rows(combinations, chunks, v);
  double floor_hi = 0;
  const nlohmann::json floor = floor_row(chunks, floor_hi);

  // Settings that cannot move alone (a quantized V cache needs flash attention) are one player
  // for the Shapley values, so that every combination of players ran.
  std::vector<bool> possible(n_comb);
  for (size_t m = 0; m < n_comb; ++m) possible[m] = combos[m]["possible"].get<bool>();
  const std::vector<unsigned> players = analysis::coupled_players(possible);
  const std::vector<std::string> pnames = player_names(players, names);
  size_t impossible = 0;
  for (const auto& c : combos) impossible += c["possible"].get<bool>() ? 0 : 1;
  nlohmann::json out = {{"settings", names},        {"a", to_json_naming(a, names)},
                        {"b", to_json_naming(b, names)}, {"chunks", G},
                        {"combinations", combos},   {"impossible", impossible},
                        {"floor", floor},           {"total", combos[n_comb - 1]["kl_mean"]},
                        {"shapley_players", pnames}};
  attribution(v, names, players, pnames, floor_hi, out);
  return out;
}

}  // namespace hd::run
