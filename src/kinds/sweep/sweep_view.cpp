#include "kinds/sweep/sweep_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/against_floor.h"

namespace hd::report {
namespace {

std::string num(const nlohmann::json& x, const char* spec = "{:.4g}") {
  if (x.is_null()) return "-";
  if (x.is_string()) return x.get<std::string>();
  return fmt::format(fmt::runtime(spec), x.get<double>());
}

std::string shown_value(const std::string& name, const nlohmann::json& v) {
  std::string shown = v.is_string() ? v.get<std::string>() : v.dump();
  if (name == "model") shown = shown.substr(shown.find_last_of('/') + 1);
  return shown;
}

// A column per setting, as wide as its widest value (a build spec or an RPC list is long).
size_t column_width(const std::string& name, const nlohmann::json& combinations) {
  size_t w = name == "model" ? 23 : 7;
  for (const auto& c : combinations) {
    w = std::max(w, shown_value(name, c["values"].value(name, nlohmann::json())).size());
  }
  return w;
}

std::string values_text(const nlohmann::json& values, const nlohmann::json& settings,
                        const nlohmann::json& a, const nlohmann::json& combinations) {
  std::string out;
  for (const auto& n : settings) {
    const std::string name = n.get<std::string>();
    const nlohmann::json v = values.value(name, nlohmann::json());
    const bool is_b = v != a.value(name, nlohmann::json());
    out += fmt::format("{}{:<{}} ", is_b ? '*' : ' ', shown_value(name, v),
                       column_width(name, combinations));
  }
  return out;
}

std::string short_name(const std::string& setting) {
  if (setting == "cache_type_k") return "ctk";
  if (setting == "cache_type_v") return "ctv";
  if (setting == "flash_attn") return "fa";
  if (setting == "n_ubatch") return "ub";
  if (setting == "n_threads") return "threads";
  return setting;
}

}  // namespace

// The floor: the larger of A's and B's, then each (sweeps from before B's floor: A's alone).
static void print_floor(std::ostream& os, const nlohmann::json& r) {
  if (!r["floor"].is_null()) {
    const auto line = [&](const char* what, const nlohmann::json& f) {
      os << fmt::format("{}: mean KL {} ± {}, top-1 Δ {:.3f}%\n", what, num(f["kl_mean"]),
                        num(f["kl_ci95"]), 100 * f["top1_change_rate"].get<double>());
    };
    const bool both = r["floor"].contains("floor_b") && !r["floor"]["floor_b"].is_null();
    if (!both) {
      line("numerical floor (A re-split into other ubatches)", r["floor"]);
    } else {
      line("numerical floor (the larger of A vs A′ and B vs B′)", r["floor"]);
      line("  A vs A′ (A re-split into other ubatches)", r["floor"]["floor_a"]);
      line("  B vs B′ (B re-split into other ubatches)", r["floor"]["floor_b"]);
    }
  }
}

void print_sweep(std::ostream& os, const LoadedResult& l) {
  const auto& r = l.result;
  const auto& settings = r["settings"];
  os << fmt::format("sweep: {} chunk(s); arms differ in {} setting(s)", r["chunks"].get<int>(),
                    settings.size());
  if (settings.empty()) {
    os << ": nothing to attribute\n";
  } else {
    os << " (* = B's value)\n";
  }
  std::string header;
  for (const auto& n : settings) {
    const std::string name = n.get<std::string>();
    header += fmt::format(" {:<{}} ", short_name(name), column_width(name, r["combinations"]));
  }
  os << fmt::format("\n{}{:>12} {:>10} {:>8} {:>9}\n", header, "mean KL", "±95%", "top-1 Δ",
                    "PPL");
  for (const auto& c : r["combinations"]) {
    os << values_text(c["values"], settings, r["a"], r["combinations"]);
    if (!c["possible"].get<bool>()) {
      os << "cannot run: " << c["reason"].get<std::string>() << "\n";
      continue;
    }
    os << fmt::format("{:>12} {:>10} {:>7.3f}% {:>9}\n", num(c["kl_mean"]), num(c["kl_ci95"]),
                      100 * c["top1_change_rate"].get<double>(), num(c["ppl"], "{:.4f}"));
  }
  print_floor(os, r);
  if (const std::string note = analysis::few_chunks_note(r.value("chunks", size_t{0}));
      !note.empty()) {
    os << note << "\n";
  }
  if (settings.empty()) return;
  os << fmt::format("\ntotal KL(A || B) = {}; attribution (mean over chunks ± 95%; Shapley values "
                    "add up to the total)\n",
                    num(r["total"]));
  auto players_text = [](const std::string& player) {
    std::string out;
    for (size_t start = 0; start <= player.size();) {
      const size_t plus = std::min(player.find('+', start), player.size());
      if (!out.empty()) out += '+';
      out += short_name(player.substr(start, plus - start));
      start = plus + 1;
    }
    return out;
  };
  os << fmt::format("{:<16} {:>12} {:>10}\n", "Shapley value", "", "±95%");
  for (const auto& p : r["shapley_players"]) {
    const std::string name = p.get<std::string>();
    // Sweeps from before the two statements hold one list, "within_floor".
    const auto listed = [&](const char* key) {
      bool in = false;
      if (r.contains(key))
        for (const auto& w : r[key]) in |= w == name;
      return in;
    };
    std::string says;
    if (listed("interval_includes_0")) says += std::string("  ") + analysis::kIncludesZero;
    if (listed("below_floor")) says += std::string("  ") + analysis::kBelowFloor;
    if (listed("within_floor")) says += "  within the floor";
    os << fmt::format("{:<16} {:>12} {:>10}{}\n", players_text(name), num(r["shapley"][name]),
                      num(r["shapley_ci95"][name]), says);
  }
  if (r["shapley_players"].size() < settings.size()) {
    os << r["impossible"].get<int>()
       << " combination(s) cannot run: settings joined by + move together as one player\n";
  }
  os << fmt::format("\n{:<16} {:>12} {:>10}\n", "main effect", "", "±95%");
  for (const auto& n : settings) {
    const std::string name = n.get<std::string>();
    os << fmt::format("{:<16} {:>12} {:>10}\n", short_name(name), num(r["main_effects"][name]),
                      num(r["main_effects_ci95"][name]));
  }
  if (!r["interactions"].empty()) {
    os << "\ninteractions (v(both) - v(one) - v(other) + v(neither), mean over the rest):\n";
    for (const auto& in : r["interactions"]) {
      os << fmt::format("  {} × {}: {} ± {}\n", short_name(in["settings"][0]),
                        short_name(in["settings"][1]), num(in["value"]), num(in["ci95"]));
    }
  }
}

}  // namespace hd::report
