#include "report/analyses.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/json_number.h"
#include "errors.h"
#include "report/rates.h"
#include "report/show.h"
#include "store/experiment.h"

namespace hd::report {

std::vector<NamedSummary> summarize_analyses(const store::Experiment& e) {
  std::vector<NamedSummary> out;
  for (const auto& name : e.analyses()) {
    const analysis::ChunkAnalysis* a = analysis::find_chunk_analysis(name);
    if (a == nullptr) {
      analysis::SummaryTable t;
      t.title = name;
      t.notes.push_back("this build of heterodyne does not know the analysis '" + name +
                        "': its rows are kept, not summarized");
      out.emplace_back(name, std::move(t));
      continue;
    }
    const auto rows = e.analysis_rows(name);
    const auto columns = a->columns();
    for (const auto& r : rows) {
      // The table's own declared types were checked by the store; these are the analysis'.
      if (!analysis::row_fits(columns, r.cells)) {
        throw InputError("'" + e.path() + "' is damaged: a row of chunk " +
                         std::to_string(r.chunk) + " in its table analysis_" + name +
                         " does not have the columns of the analysis '" + name + "'");
      }
    }
    out.emplace_back(name, a->summarize(rows));
  }
  return out;
}

static nlohmann::json cell_json(const analysis::SummaryCell& c) {
  return std::visit(
      [](const auto& v) -> nlohmann::json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>)
          return std::isfinite(v) ? json_number(v) : nlohmann::json(nullptr);
        else if constexpr (std::is_same_v<T, analysis::RateCI>)
          return rate_json(v);
        else
          return v;
      },
      c);
}

nlohmann::json summary_table_json(const analysis::SummaryTable& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : t.rows) {
    nlohmann::json row = nlohmann::json::array();
    for (const auto& c : r) row.push_back(cell_json(c));
    rows.push_back(std::move(row));
  }
  return {{"title", t.title}, {"columns", t.columns}, {"rows", rows}, {"notes", t.notes}};
}

// As show prints every number: four significant digits, "—" where there is none.
static std::string cell_text(const analysis::SummaryCell& c) {
  if (const auto* r = std::get_if<analysis::RateCI>(&c)) return rate_text(*r);
  if (const auto* d = std::get_if<double>(&c)) {
    if (!std::isfinite(*d)) return "—";
    return *d == 0 ? "0" : fmt::format("{:.4g}", *d);
  }
  if (const auto* i = std::get_if<int64_t>(&c)) return std::to_string(*i);
  return std::get<std::string>(c);
}

// Display width of UTF-8 text: code points (the tables hold "±" and "—").
static size_t width(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
}

void print_summary_table(std::ostream& os, const analysis::SummaryTable& t) {
  std::vector<std::vector<std::string>> cells = {t.columns};
  for (const auto& r : t.rows) {
    std::vector<std::string> line;
    for (const auto& c : r) line.push_back(cell_text(c));
    cells.push_back(std::move(line));
  }
  std::vector<size_t> w;
  for (const auto& line : cells) {
    if (w.size() < line.size()) w.resize(line.size(), 0);
    for (size_t k = 0; k < line.size(); ++k) w[k] = std::max(w[k], width(line[k]));
  }
  os << "\n  " << t.title << ":\n";
  for (const auto& line : cells) {
    os << " ";
    for (size_t k = 0; k < line.size(); ++k) {
      // The first column (a label) to the left, numbers to the right.
      const std::string pad(w[k] - width(line[k]), ' ');
      os << "  " << (k == 0 ? line[k] + pad : pad + line[k]);
    }
    os << "\n";
  }
  for (const auto& n : t.notes) os << "  " << n << "\n";
}

void print_analyses_alone(std::ostream& os, const Loaded& l, const std::string& flag) {
  std::vector<std::string> diff_flags;
  bool any = false;
  for (const auto& a : analysis::chunk_analyses()) {
    const analysis::Shortcut s = a->shortcut();
    if (s.show_flag != flag) continue;
    if (!s.diff_flag.empty() &&
        std::find(diff_flags.begin(), diff_flags.end(), s.diff_flag) == diff_flags.end())
      diff_flags.push_back(s.diff_flag);
    for (const auto& [name, table] : l.analyses) {
      if (name != a->name()) continue;
      print_summary_table(os, table);
      any = true;
    }
  }
  // The maps under every table of the flag.
  for (const auto& a : analysis::chunk_analyses()) {
    const auto map = l.maps.find(a->name());
    if (a->shortcut().show_flag != flag || map == l.maps.end()) continue;
    os << "\n";
    for (const std::string& line : map->second) os << (line.empty() ? "" : "  ") << line << "\n";
  }
  if (!any) {
    std::string how;
    for (size_t i = 0; i < diff_flags.size(); ++i)
      how += (i ? " or --" : "--") + diff_flags[i];
    throw InputError("'" + l.path + "' has no " + flag + " rows: run diff with " + how);
  }
}

}  // namespace hd::report
