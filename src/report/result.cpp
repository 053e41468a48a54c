#include "report/result.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include "analysis/transplant_summary.h"

namespace hd::report {
namespace {

using nlohmann::json;

// Values drawn only for reading (probabilities, per-layer errors, per-step KL) keep 4
// significant digits: the page shows no more, and at 20k tokens they are most of the bytes.
// KL and NLL per token keep every digit: they are sorted, summed and coloured.
json shown(double v) {
  if (!std::isfinite(v)) return nullptr;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return std::strtod(buf, nullptr);
}

json top_json(const analysis::TopK& t, std::set<int32_t>& used) {
  json a = json::array();
  for (size_t k = 0; k < t.id.size(); ++k) {
    used.insert(t.id[k]);
    a.push_back(t.id[k]);
    a.push_back(shown(t.p[k]));
  }
  return a;
}

// One array per column, indexed by the chunk's token index i (the row at predicting position
// i − 1 is shown on token i), null where no row is: pandas reads a chunk as a DataFrame.
json chunk_json(const analysis::ChunkResult& c, std::set<int32_t>& used) {
  const size_t n = c.tokens.size();
  json scored = json::array(), kl = json::array(), nll_a = json::array(), nll_b = json::array();
  json top_a = json::array(), top_b = json::array();
  for (size_t i = 0; i < n; ++i) {
    used.insert(c.tokens[i]);
    scored.push_back(0);
    kl.push_back(nullptr);
    nll_a.push_back(nullptr);
    nll_b.push_back(nullptr);
    top_a.push_back(nullptr);
    top_b.push_back(nullptr);
  }
  for (const auto& p : c.diff.positions) {
    const size_t i = static_cast<size_t>(p.pos) + 1;
    if (i >= n) continue;
    scored[i] = p.scored ? 1 : 0;
    kl[i] = p.score.kl;
    nll_a[i] = p.score.nll_a;
    nll_b[i] = p.score.nll_b;
    if (p.scored) {
      top_a[i] = top_json(p.score.top_a, used);
      top_b[i] = top_json(p.score.top_b, used);
    }
  }
  json out = {{"chunk", c.chunk}, {"tokens", c.tokens}, {"scored", std::move(scored)},
              {"kl", std::move(kl)},   {"nll_a", std::move(nll_a)}, {"nll_b", std::move(nll_b)},
              {"top_a", std::move(top_a)}, {"top_b", std::move(top_b)}};
  // The residual's relative error after each layer, at the position predicting token i.
  std::map<int, json> layers;
  for (const auto& r : c.diff.layers) {
    auto [it, fresh] = layers.try_emplace(r.layer, json::array());
    if (fresh)
      for (size_t i = 0; i < n; ++i) it->second.push_back(nullptr);
    const size_t i = static_cast<size_t>(r.pos) + 1;
    if (i < n) it->second[i] = shown(r.diff.rel_err);
  }
  json rel = json::array();
  for (auto& [layer, values] : layers) rel.push_back({{"layer", layer}, {"rel_err", std::move(values)}});
  out["layers"] = std::move(rel);
  if (c.transplants) {
    const auto& t = *c.transplants;
    const auto steps = [&](const std::vector<analysis::TransplantRow>& rows) {
      json s = json::array();
      for (size_t k = 0; k < t.points.size(); ++k) s.push_back(json(n, nullptr));
      for (const auto& r : rows) {
        const size_t i = static_cast<size_t>(r.pos) + 1;
        if (r.step >= 1 && static_cast<size_t>(r.step) <= t.points.size() && i < n)
          s[static_cast<size_t>(r.step - 1)][i] = shown(r.kl);
      }
      return s;
    };
    out["points"] = t.points;
    out["denoise"] = steps(t.denoise);
    out["noise"] = steps(t.noise);
  }
  return out;
}

json cell_value(const analysis::Cell& cell) {
  if (const auto* d = std::get_if<double>(&cell)) return shown(*d);
  if (const auto* i = std::get_if<int64_t>(&cell)) return *i;
  return std::get<std::string>(cell);
}

// A plug-in's rows of one chunk, for the token they are shown on: {columns, token_columns,
// rows: [[i, cells but pos…]]}, i = pos + 1 as for every per-token array.
json position_rows_json(const Loaded::PositionRows& p,
                        const std::vector<const analysis::StoredRow*>& chunk_rows, size_t n,
                        std::set<int32_t>& used) {
  size_t pos_col = 0;
  json columns = json::array(), token_columns = json::array();
  std::vector<bool> token_col;
  for (size_t k = 0; k < p.columns.size(); ++k) {
    const auto& c = p.columns[k];
    if (c.name == "pos") {
      pos_col = k;
      continue;
    }
    columns.push_back(c.name);
    // A column of token ids (the lens's top-1 of each arm): their pieces join the document's
    // table and the page shows them as text.
    token_col.push_back(c.token);
    if (token_col.back()) token_columns.push_back(c.name);
  }
  json rows = json::array();
  for (const analysis::StoredRow* rp : chunk_rows) {
    const auto& r = *rp;
    if (r.cells.size() != p.columns.size()) continue;
    const auto* pos = std::get_if<int64_t>(&r.cells[pos_col]);
    if (pos == nullptr || *pos < 0 || static_cast<size_t>(*pos) + 1 >= n) continue;
    json row = json::array({*pos + 1});
    for (size_t k = 0, out = 0; k < r.cells.size(); ++k) {
      if (k == pos_col) continue;
      if (token_col[out++])
        if (const auto* id = std::get_if<int64_t>(&r.cells[k])) used.insert(static_cast<int32_t>(*id));
      row.push_back(cell_value(r.cells[k]));
    }
    rows.push_back(std::move(row));
  }
  return {{"columns", std::move(columns)},
          {"token_columns", std::move(token_columns)},
          {"rows", std::move(rows)}};
}

}  // namespace

json result_json(const Loaded& l) {
  json chunks = json::array();
  std::set<int32_t> used;
  // Each plug-in's rows grouped by chunk once, not scanned again for every chunk.
  std::map<std::string, std::map<int, std::vector<const analysis::StoredRow*>>> by_chunk;
  for (const auto& [name, p] : l.position_rows)
    for (const auto& r : p.rows) by_chunk[name][r.chunk].push_back(&r);
  for (const auto& c : l.chunks) {
    chunks.push_back(chunk_json(c, used));
    if (l.position_rows.empty()) continue;
    json rows = json::object();
    for (const auto& [name, p] : l.position_rows)
      rows[name] = position_rows_json(p, by_chunk[name][c.chunk], c.tokens.size(), used);
    chunks.back()["analyses"] = std::move(rows);
  }
  json pieces = json::object();
  for (const int32_t id : used) pieces[std::to_string(id)] = piece_text(l, id);
  return {{"format", 2},
          {"summary", summary_json(l, 0)},
          {"pieces", std::move(pieces)},
          {"chunks", std::move(chunks)}};
}

}  // namespace hd::report
