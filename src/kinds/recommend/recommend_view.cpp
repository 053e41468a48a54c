#include "kinds/recommend/recommend_view.h"

#include <fmt/format.h>

#include <cmath>

#include "kinds/recommend/recommend_rows.h"

namespace hd::report {

namespace {

double num(const nlohmann::json& v) { return v.is_number() ? v.get<double>() : NAN; }

// Round 0 measured every group at every type from the stock base file: the group's ΔKL from the
// base at its final type, which no later round's start changes (NaN where round 0 has none).
double delta_from_base(const nlohmann::json& sensitivity, const std::string& group,
                       const std::string& type) {
  double base = NAN, at = NAN;
  for (const auto& row : sensitivity) {
    if (row.value("round", -1) != 0) continue;
    if (row.value("group", "") == "(base)") base = num(row["kl_calibration"]);
    if (row.value("group", "") == group && row.value("type", "") == type)
      at = num(row["kl_calibration"]);
  }
  return at - base;
}

void print_held_out(std::ostream& os, const nlohmann::json& rows) {
  os << "on the held-out text, A against each (floor: the larger of A vs A′ and B vs B′):\n";
  os << fmt::format("  {:<8} {:>12} {:>6} {:>24} {:>9} {:>10} {:>11}\n", "model", "bytes", "bpw",
                    "mean KL ± 95 %", "top-1 Δ", "PPL B", "floor KL");
  for (const auto& r : rows) {
    os << fmt::format("  {:<8} {:>12} {:>6.3f} {:>24} {:>8.2f}% {:>10.4f} {:>11.3g}\n",
                      r["name"].get<std::string>(), r["bytes"].get<uint64_t>(), num(r["bpw"]),
                      fmt::format("{:.5g} ± {:.2g}", num(r["kl_mean"]), num(r["kl_ci95"])),
                      100 * num(r["top1_change"]), num(r["ppl_b"]), num(r["floor_kl"]));
  }
  const auto& recipe = rows.at(0);
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& s = rows[i];
    const double gap = num(s["kl_mean"]) - num(recipe["kl_mean"]);
    const double reach = num(s["kl_ci95"]) + num(recipe["kl_ci95"]);
    const std::string size =
        fmt::format("{:+.2f} % the size", 100.0 * (num(recipe["bytes"]) / num(s["bytes"]) - 1));
    os << fmt::format("  recipe vs {}: {}, KL {} ({})\n", s["name"].get<std::string>(), size,
                      std::isnan(reach) ? "with no interval to read it by (one chunk)"
                      : gap > reach     ? "lower, the intervals apart"
                      : gap < -reach ? "higher, the intervals apart"
                                     : "within the intervals of each other",
                      fmt::format("{:.3g} × {}", num(recipe["kl_mean"]) / num(s["kl_mean"]),
                                  s["name"].get<std::string>()));
  }
}

// The stock type a user compares the recipe with: the one the target size names, else the
// smallest stock file at least the recipe's size (held-out rows: the recipe first).
const nlohmann::json* stock_at_equal_size(const nlohmann::json& r) {
  if (!r.is_object() || !r.contains("held_out")) return nullptr;
  const auto& rows = r.at("held_out");
  if (!rows.is_array() || rows.size() < 2) return nullptr;
  const nlohmann::json target = r.value("target", nlohmann::json());
  const std::string named = target.is_object() ? target.value("size", "") : "";
  const nlohmann::json* best = nullptr;
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].value("name", "") == named) return &rows[i];
    if (rows[i].value("bytes", uint64_t{0}) >= rows[0].value("bytes", uint64_t{0}) &&
        (best == nullptr || rows[i].value("bytes", uint64_t{0}) < best->value("bytes", uint64_t{0})))
      best = &rows[i];
  }
  return best;
}

std::string signed_or(double v, const char* otherwise) {
  return std::isnan(v) ? otherwise : fmt::format("{:+.4g}", v);
}

}  // namespace

void add_recommend_rows(const store::Experiment& e, nlohmann::json& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : store::read_sensitivity(e)) {
    rows.push_back({{"round", r.round},
                    {"group", r.group},
                    {"type", r.type},
                    {"bytes", r.bytes},
                    {"status", r.status},
                    {"kl_calibration", r.kl_calibration},
                    {"kl_held_out", r.kl_held_out},
                    {"top1_calibration", r.top1_calibration}});
  }
  // Each moved group's ΔKL from the base as well as from the last round's start (at which a
  // group the start already gave its type moved nothing: 0).
  if (result.contains("groups") && result["groups"].is_array()) {
    for (auto& g : result["groups"]) {
      if (!g.is_object() || !g.contains("group") || !g.contains("type")) continue;
      const double d = delta_from_base(rows, g.value("group", ""), g.value("type", ""));
      g["delta_kl_from_base"] = std::isnan(d) ? nlohmann::json() : nlohmann::json(d);
    }
  }
  result["sensitivity"] = rows;
  // The page reads the recipe against this stock model: chosen here, once, as show chooses it.
  const nlohmann::json* stock = stock_at_equal_size(result);
  result["stock_at_size"] = stock != nullptr && stock->contains("name") ? stock->at("name")
                                                                        : nlohmann::json();
}


void print_recommend(std::ostream& os, const LoadedResult& l) {
  const auto& r = l.result;
  const auto& target = r["target"];
  os << fmt::format("recommend: base {}, target {}\n", r["base"].get<std::string>(),
                    target.contains("bytes")
                        ? fmt::format("size {} ({} bytes)", target["size"].get<std::string>(),
                                      target["bytes"].get<uint64_t>())
                        : fmt::format("mean KL {:.6g} (calibration)", num(target["kl"])));
  os << fmt::format("base {}: mean KL {:.6g} on the calibration text\n",
                    r["base"].get<std::string>(), num(r["base_kl_calibration"]));
  // The comparison a user makes: the recipe against the stock type of its size, held out.
  if (const nlohmann::json* stock = stock_at_equal_size(r)) {
    const auto& recipe = r["held_out"][0];
    os << fmt::format("held out: the recipe {} bytes, mean KL {:.5g}; stock {} {} bytes, mean KL "
                      "{:.5g} (the recipe {:.3g} × the stock type's KL)\n",
                      recipe.value("bytes", uint64_t{0}), num(recipe["kl_mean"]),
                      stock->value("name", "?"), stock->value("bytes", uint64_t{0}),
                      num((*stock)["kl_mean"]), num(recipe["kl_mean"]) / num((*stock)["kl_mean"]));
  }
  os << "\nthe groups the recipe moves from the base (every group: --json):\n";
  os << fmt::format("  {:<28} {:>10} {:>10} {:>7} {:>12} {:>16} {:>16}\n", "group", "base",
                    "start", "type", "bytes", "ΔKL from base", "ΔKL from start");
  int moved = 0;
  for (const auto& g : r["groups"]) {
    if (g["type"] == g["base"]) continue;
    ++moved;
    // A group already at its type in the last round's start moved nothing from there.
    const bool at_start = g["type"] == g["start"];
    os << fmt::format("  {:<28} {:>10} {:>10} {:>7} {:>12} {:>16} {:>16}\n",
                      g["group"].get<std::string>(), g["base"].get<std::string>(),
                      g["start"].get<std::string>(), g["type"].get<std::string>(),
                      g["bytes"].get<uint64_t>(),
                      signed_or(num(g.value("delta_kl_from_base", nlohmann::json())), "n/a"),
                      at_start ? "(the start's)" : signed_or(num(g["delta_kl"]), "n/a"));
  }
  if (moved == 0) os << "  (none: the base is the best recipe for this target)\n";
  if (r["rounds"].size() > 1 && moved > 0)
    os << fmt::format("(start: the recipe round {} chose, where round {} measured the deltas)\n",
                      r["rounds"].size() - 2, r["rounds"].size() - 1);
  if (!r.value("target_met", true)) os << "the target is not met: the least KL reached is shown\n";
  const auto& p = r["predicted"];
  const auto& m = r["measured"];
  // How far the additive prediction is from the recipe measured on the same calibration text.
  const double off = num(p["kl_calibration"]) / num(m["kl_calibration"]) - 1;
  os << fmt::format("\npredicted {} bytes, mean KL {:.6g}; measured {} bytes, mean KL {:.6g} "
                    "(the prediction {:+.1f} % of the measured)\n",
                    p["file_bytes"].get<uint64_t>(), num(p["kl_calibration"]),
                    m["file_bytes"].get<uint64_t>(), num(m["kl_calibration"]), 100 * off);
  const auto& rounds = r["rounds"];
  for (size_t i = 0; i + 1 < rounds.size(); ++i) {
    const auto& x = rounds[i];
    os << fmt::format("  round {} (from {:.6g}): predicted {:.6g}, measured {:.6g} ({:+.1f} %)\n",
                      i, num(x["start_kl_calibration"]), num(x["predicted_kl_calibration"]),
                      num(x["measured_kl_calibration"]),
                      100 * (num(x["predicted_kl_calibration"]) /
                                 num(x["measured_kl_calibration"]) -
                             1));
  }
  os << fmt::format("every tensor's type read back from {} ({} tensors); tensor-types.txt pins "
                    "all {} quantized tensors ({} moved from the base)\n",
                    r["model"]["file"].get<std::string>(),
                    r["model"]["tensors_read_back"].get<int>(), r["overrides"].get<int>(),
                    r["tensors_moved"].get<int>());
  os << fmt::format("rank correlation of the variants' KL, calibration vs held-out: Spearman "
                    "{:.3f} over {} variants\n\n",
                    num(r["rank_correlation"]["spearman"]),
                    r["rank_correlation"]["variants"].get<int>());
  print_held_out(os, r["held_out"]);
}

}  // namespace hd::report
