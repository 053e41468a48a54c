#include "report/show.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "analysis/consistency.h"
#include "common/json_number.h"
#include "errors.h"
#include "report/analyses.h"
#include "report/figures.h"
#include "report/noise_floor.h"
#include "report/rates.h"
#include "report/stored_result.h"
#include "report/transplants.h"
#include "store/experiment.h"

namespace hd::report {

using analysis::ChunkResult;
using analysis::PositionRow;

Loaded load_experiment(const std::string& path, bool position_rows) {
  const store::Experiment e = store::Experiment::open(path, false);
  Loaded l;
  l.path = path;
  l.status = e.live_status();
  l.integrity = e.integrity_verdict();
  l.config = stored_object(e, "config", e.stored_config());
  l.provenance = stored_object(e, "provenance", e.meta("provenance").value_or("{}"));
  l.chunks = e.read_all();
  if (const auto problem = analysis::chunks_problem(l.chunks))
    throw InputError("'" + path + "' is damaged: " + *problem);
  l.pieces = e.pieces();
  // A run that measured its floor on two splits records the second's ubatch (kinds/diff/diff_run.cpp).
  l.summary = analysis::summarize(l.chunks, l.provenance.contains("floor_ubatch_2"));
  l.transplants = analysis::summarize_transplants(l.chunks);
  l.analyses = summarize_analyses(e);
  for (const auto& name : e.analyses()) {
    const analysis::ChunkAnalysis* a = analysis::find_chunk_analysis(name);
    if (a == nullptr) continue;  // unknown to this build: summarize_analyses said so
    auto columns = a->columns();
    const bool per_position = std::any_of(columns.begin(), columns.end(),
                                          [](const analysis::ColumnDef& c) { return c.name == "pos"; });
    if (!a->draws_map() && !(per_position && position_rows)) continue;
    auto rows = e.analysis_rows(name);
    if (auto map = a->map(rows); !map.empty()) l.maps[name] = std::move(map);
    if (per_position && position_rows) l.position_rows[name] = {std::move(columns), std::move(rows)};
  }
  return l;
}

std::string printable(const std::string& piece) {
  std::string out;
  for (char c : piece) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  return out;
}

std::string piece_text(const Loaded& l, int32_t id) {
  auto it = l.pieces.find(id);
  return it == l.pieces.end() ? fmt::format("<{}>", id) : it->second;
}

static std::string piece(const Loaded& l, int32_t id) { return printable(piece_text(l, id)); }


// -fa as asked, and what llama.cpp ran where that differs ("auto→on"; Grok: "on→off").
std::string flash_attn_text(const nlohmann::json& arm) {
  const std::string asked = arm.value("flash_attn", "?");
  const auto& runs_on = arm.value("runs_on", nlohmann::json());
  const std::string ran = runs_on.is_object() && runs_on.contains("flash_attn") &&
                                  runs_on["flash_attn"].is_string()
                              ? runs_on["flash_attn"].get<std::string>()
                              : "";
  return ran.empty() || ran == asked ? asked : asked + "→" + ran;
}

// `title`: what the arm is called, its model's path unless the user named it otherwise.
static std::string arm_line(const nlohmann::json& arm, const std::string& title) {
  if (arm.is_null()) return "?";
  std::string where;  // only what differs from this binary's CPU, as the flags spell it
  const std::string device = arm.value("device", "cpu");
  if (device != "cpu") where += " -dev " + device;
  const auto rpc = arm.value("rpc", std::vector<std::string>{});
  if (!rpc.empty()) where += " --rpc " + fmt::format("{}", fmt::join(rpc, ","));
  if ((device != "cpu" || !rpc.empty()) && arm.value("n_gpu_layers", -1) >= 0) {
    where += " -ngl " + std::to_string(arm.value("n_gpu_layers", -1));
  }
  const std::string build = arm.value("llama_build", "");
  if (!build.empty()) where += " --llama-build " + build;
  if (const std::string server = arm.value("server", ""); !server.empty()) where += " " + server;
  return fmt::format("{}  [-ctk {} -ctv {} -fa {} -ub {} -t {}{}]", title,
                     arm.value("cache_type_k", "?"), arm.value("cache_type_v", "?"),
                     flash_attn_text(arm), arm.value("n_ubatch", 0),
                     arm.value("n_threads_used", 0), where);
}

void print_summary(std::ostream& os, const Loaded& l) {
  const auto& s = l.summary;
  const auto& arms = l.provenance["arms"];
  os << fmt::format("{}  ({}, {} chunks of {} tokens, {} scored positions, score-from {})\n",
                    l.path, l.status, s.n_chunks, l.config.value("chunk", 0), s.diff.n_scored,
                    l.config.value("score_from", "?"));
  if (const auto& shard = l.provenance.value("shard", nlohmann::json()); shard.is_object()) {
    os << fmt::format("  part {}/{} of a sharded run: chunk c where c mod {} = {} (heterodyne "
                      "merge joins the parts)\n",
                      shard.value("index", 0), shard.value("count", 0), shard.value("count", 0),
                      shard.value("index", 0));
  } else if (const auto& m = l.provenance.value("merged", nlohmann::json()); m.is_object()) {
    os << fmt::format("  merged from {} parts (provenance \"parts\": where each ran)\n",
                      m.value("parts", 0));
  }
  if (l.status == "stopped") {  // stopped: its writer is gone (store::Experiment::live_status)
    os << "  stopped: nothing writes it now; heterodyne diff --resume " << l.path
       << " finishes it\n";
  }
  if (l.integrity == store::kIntegrityMismatch) {
    os << "  WARNING: integrity check failed: this file was changed after the run sealed it\n";
  }
  const auto model_of = [&](const char* arm) {
    return arms.is_object() && arms.contains(arm) && arms[arm].is_object()
               ? arms[arm].value("model", "?")
               : std::string("?");
  };
  os << "  A  " << arm_line(arms["a"], model_of("a")) << "\n";
  // B made by --b-quant: called what the user asked for; its cached file is a detail.
  const std::string quant = l.config.value("b_quant", "");
  if (quant.empty()) {
    os << "  B  " << arm_line(arms["b"], model_of("b")) << "\n";
  } else {
    const std::string a = model_of("a");
    os << "  B  " << arm_line(arms["b"], a.substr(a.find_last_of('/') + 1) + " → " + quant) << "\n"
       << "     (A quantized to " << quant << " by heterodyne, cached at " << model_of("b")
       << ")\n";
  }
  if (s.n_chunks == 0) {
    os << "no chunk is stored yet\n";
    return;
  }
  print_against_floor(os, l);
  for (const auto& [name, table] : l.analyses) print_summary_table(os, table);
}

// What tells the runs shown apart (the web UI's compare page follows the same rule,
// web/src/compare_view.ts runLabels): of A's model, B's model (its quantization type where
// heterodyne made it), the K and V cache types, flash attention, the ubatch and the llama.cpp
// build, the ones whose values are not all the same, in that order; the file's name where
// none differs.
static std::vector<std::string> run_labels(const std::vector<Loaded>& runs) {
  const auto base = [](const std::string& p) { return p.substr(p.find_last_of('/') + 1); };
  std::vector<std::vector<std::pair<std::string, std::string>>> facts;
  for (const Loaded& l : runs) {
    const nlohmann::json arms = l.provenance.is_object()
                                    ? l.provenance.value("arms", nlohmann::json::object())
                                    : nlohmann::json::object();
    const nlohmann::json none = nlohmann::json::object();
    const nlohmann::json& a = arms.contains("a") && arms["a"].is_object() ? arms["a"] : none;
    const nlohmann::json& b = arms.contains("b") && arms["b"].is_object() ? arms["b"] : none;
    const std::string quant = l.config.value("b_quant", "");
    const auto text = [&](const char* key) {
      const auto& v = b.is_object() && b.contains(key) ? b[key] : nlohmann::json();
      return v.is_string() ? v.get<std::string>() : v.is_number() ? v.dump() : std::string();
    };
    facts.push_back({{"A", base(a.value("model", ""))},
                     {"", quant.empty() ? base(b.value("model", "")) : quant},
                     {"ctk", text("cache_type_k")},
                     {"ctv", text("cache_type_v")},
                     {"fa", text("flash_attn")},
                     {"ub", text("n_ubatch")},
                     {"build", text("llama_build")}});
  }
  std::vector<size_t> keys;
  for (size_t k = 0; !facts.empty() && k < facts[0].size(); ++k) {
    for (const auto& f : facts) {
      if (f[k].second != facts[0][k].second) {
        keys.push_back(k);
        break;
      }
    }
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string label;
    for (size_t k : keys) {
      const auto& [key, value] = facts[i][k];
      label += (label.empty() ? "" : " · ") +
               (key.empty() ? (value.empty() ? "—" : value)
                            : key + " " + (value.empty() ? "default" : value));
    }
    if (label.empty()) {
      const std::string file = base(runs[i].path);
      label = file.substr(0, file.rfind(".hdy"));
    }
    // One run shown twice keeps one name per row: the second is "(2)".
    if (std::find(out.begin(), out.end(), label) != out.end()) label += fmt::format(" ({})", i + 1);
    out.push_back(label);
  }
  return out;
}

void print_ladder(std::ostream& os, const std::vector<Loaded>& runs) {
  // B's size first after its name: what a quantizer compares the KL against. Bits per weight
  // of the whole file (its metadata too), over the weights llama.cpp counts.
  const std::vector<std::string> labels = run_labels(runs);
  const size_t width = std::max<size_t>(22, [&] {
    size_t w = 0;
    for (const auto& x : labels) w = std::max(w, x.size());
    return w;
  }());
  os << fmt::format("{:<{}} {:>10} {:>7} {:>24} {:>22} {:>10} {:>10} {:>22} {:>9}\n", "run",
                    width, "B's file", "bits/w", "mean KL(A‖B)", "top-1 change (95 %)", "PPL A",
                    "PPL B", "floor KL", "positions");
  for (size_t i = 0; i < runs.size(); ++i) {
    const Loaded& l = runs[i];
    const auto& s = l.summary;
    const std::string floor = floor_kl_cell(s);
    // A run with positions of KL +inf says so in its row: its mean is over the others.
    const std::string kl = with_ci(s.diff.kl) + (s.diff.n_kl_infinite > 0
                                                      ? fmt::format(" (+inf at {})", s.diff.n_kl_infinite)
                                                      : "");
    const auto ppl = [](double v) { return std::isnan(v) ? std::string("n/a") : fmt::format("{:.4f}", v); };
    const auto& b = l.provenance["arms"]["b"];
    const double bytes = b.value("model_size", 0.0), params = b.value("n_params", 0.0);
    const std::string size = bytes <= 0 ? "n/a"
                             : bytes >= 1e9 ? fmt::format("{:.2f} GB", bytes / 1e9)
                                            : fmt::format("{:.2f} MB", bytes / 1e6);
    const std::string bpw = bytes > 0 && params > 0 ? fmt::format("{:.2f}", 8 * bytes / params) : "n/a";
    os << fmt::format("{:<{}} {:>10} {:>7} {:>24} {:>22} {:>10} {:>10} {:>22} {:>9}\n", labels[i],
                      width, size, bpw, kl, rate_text(s.diff.top1_rate), ppl(s.diff.ppl_a),
                      ppl(s.diff.ppl_b), floor, s.diff.n_scored);
  }
}

static std::vector<const PositionRow*> worst_rows(const Loaded& l, int n,
                                                  std::vector<int>& chunk_of) {
  std::vector<std::pair<const PositionRow*, int>> rows;
  for (const auto& c : l.chunks) {
    for (const auto& p : c.diff.positions) {
      if (p.scored) rows.push_back({&p, c.chunk});
    }
  }
  const size_t k = std::min(rows.size(), static_cast<size_t>(std::max(n, 0)));
  std::partial_sort(
      rows.begin(), rows.begin() + static_cast<long>(k), rows.end(),
      [](const auto& x, const auto& y) { return x.first->score.kl > y.first->score.kl; });
  std::vector<const PositionRow*> out;
  for (size_t i = 0; i < k; ++i) {
    out.push_back(rows[i].first);
    chunk_of.push_back(rows[i].second);
  }
  return out;
}

static const ChunkResult& chunk_by_id(const Loaded& l, int id) {
  for (const auto& c : l.chunks) {
    if (c.chunk == id) return c;
  }
  return l.chunks.front();
}

static std::string top_list(const Loaded& l, const analysis::TopK& t) {
  std::string s;
  for (size_t k = 0; k < t.id.size(); ++k) {
    s += fmt::format("{}'{}' {:.3f}", k ? "  " : "", piece(l, t.id[k]), t.p[k]);
  }
  return s;
}

void print_position_row(std::ostream& os, const Loaded& l, const ChunkResult& c,
                        const PositionRow& r) {
  std::string before;
  for (int p = std::max(0, r.pos - 12); p <= r.pos; ++p)
    before += piece(l, c.tokens[static_cast<size_t>(p)]);
  os << fmt::format("\n  {}:{}  KL {:.5f}  NLL A {:.3f}  B {:.3f}{}\n", c.chunk, r.pos,
                    r.score.kl, r.score.nll_a, r.score.nll_b,
                    r.score.top_a.id[0] != r.score.top_b.id[0] ? "  top-1 flipped" : "");
  os << fmt::format("    …{}[{}]\n", before, piece(l, r.target));
  os << "    A: " << top_list(l, r.score.top_a) << "\n";
  os << "    B: " << top_list(l, r.score.top_b) << "\n";
}

void print_worst(std::ostream& os, const Loaded& l, int n) {
  std::vector<int> chunk_of;
  const auto rows = worst_rows(l, n, chunk_of);
  os << fmt::format("\nthe {} positions with the largest KL(A‖B):\n", rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    print_position_row(os, l, chunk_by_id(l, chunk_of[i]), *rows[i]);
}

nlohmann::json summary_json(const Loaded& l, int worst) {
  const auto& s = l.summary;
  nlohmann::json j = comparison_json(s.diff);
  j["file"] = l.path;
  j["status"] = l.status;
  j["integrity"] = l.integrity;
  j["n_chunks"] = s.n_chunks;
  add_floor_json(j, l);
  if (l.transplants) add_transplants_json(j, *l.transplants, kl_floor(s));
  if (!l.analyses.empty()) {
    j["analyses"] = nlohmann::json::object();
    for (const auto& [name, table] : l.analyses) j["analyses"][name] = summary_table_json(table);
    for (const auto& [name, lines] : l.maps) j[name + "_map"] = lines;  // "routing_map"
  }
  j["config"] = l.config;
  j["provenance"] = l.provenance;
  if (worst > 0) {
    std::vector<int> chunk_of;
    const auto rows = worst_rows(l, worst, chunk_of);
    j["worst"] = nlohmann::json::array();
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& r = *rows[i];
      auto top = [&](const analysis::TopK& t) {
        nlohmann::json a = nlohmann::json::array();
        for (size_t k = 0; k < t.id.size(); ++k)
          a.push_back({{"id", t.id[k]}, {"text", piece_text(l, t.id[k])}, {"p", t.p[k]}});
        return a;
      };
      j["worst"].push_back({{"chunk", chunk_of[i]},
                            {"pos", r.pos},
                            {"token_id", r.target},
                            {"token_text", piece_text(l, r.target)},
                            {"kl", json_number(r.score.kl)},  // +inf as "inf", not null
                            {"nll_a", json_number(r.score.nll_a)},
                            {"nll_b", json_number(r.score.nll_b)},
                            {"top5_a", top(r.score.top_a)},
                            {"top5_b", top(r.score.top_b)}});
    }
  }
  return j;
}

}  // namespace hd::report
