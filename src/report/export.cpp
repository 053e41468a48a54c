#include "report/export.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <variant>

#include "analysis/flips.h"
#include "common/utf8.h"
#include "errors.h"

namespace hd::report {
namespace {

// One value of a row. A float (a stored top-1 probability) is kept a float, so that CSV prints
// the shortest text that reads back as that float.
using Cell = std::variant<int64_t, double, float, bool, std::string>;
using Row = std::vector<Cell>;

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

class Writer {
 public:
  Writer(std::ostream& os, std::vector<std::string> columns, bool csv)
      : os_(os), columns_(std::move(columns)), csv_(csv) {
    if (!csv_) return;
    for (size_t i = 0; i < columns_.size(); ++i) os_ << (i ? "," : "") << columns_[i];
    os_ << "\n";
  }
  void row(const Row& cells) {
    if (csv_) {
      for (size_t i = 0; i < cells.size(); ++i) {
        if (i) os_ << ",";
        std::visit([&](const auto& v) { os_ << csv_text(v); }, cells[i]);
      }
      os_ << "\n";
      return;
    }
    nlohmann::json j;
    for (size_t i = 0; i < cells.size(); ++i) {
      std::visit([&](const auto& v) { j[columns_[i]] = v; }, cells[i]);
    }
    os_ << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }

 private:
  static std::string csv_text(const std::string& s) { return csv_field(s); }
  static std::string csv_text(bool b) { return b ? "1" : "0"; }
  template <typename T>
  static std::string csv_text(T v) {
    return fmt::format("{}", v);  // shortest text that reads back as the same double / float
  }
  std::ostream& os_;
  std::vector<std::string> columns_;
  bool csv_;
};

// A token's stored text, "" when the file has none for it; bytes that are not UTF-8 (a byte
// token's piece) as \xHH, so that every format is valid UTF-8 (Python's csv reads it).
std::string text_of(const Loaded& l, int32_t id) {
  const auto it = l.pieces.find(id);
  return it == l.pieces.end() ? "" : escape_invalid_utf8(it->second);
}

// An arm's top-5 as JSON text: [[id, p], …], p the stored f32 (shortest text reading back).
std::string top5_json(const analysis::TopK& t) {
  std::string s = "[";
  for (size_t k = 0; k < t.id.size(); ++k)
    s += fmt::format("{}[{}, {}]", k ? ", " : "", t.id[k], t.p[k]);
  return s + "]";
}

void positions(Writer& w, const Loaded& l) {
  for (const auto& c : l.chunks) {
    for (const auto& r : c.diff.positions) {
      const auto& s = r.score;
      w.row({int64_t{c.chunk}, int64_t{r.pos}, int64_t{r.target}, text_of(l, r.target), r.scored,
             s.kl, s.nll_a, s.nll_b, int64_t{s.top_a.id[0]}, s.top_a.p[0], int64_t{s.top_b.id[0]},
             s.top_b.p[0], top5_json(s.top_a), top5_json(s.top_b)});
    }
  }
}

// A plug-in analysis' rows (analysis/plugin.h): the chunk, then its own columns; a column added
// after the file was written is empty (null) in its rows.
void analysis_rows(Writer& w, const Loaded& l, const std::string& name, size_t n_columns) {
  for (const auto& c : l.chunks) {
    const auto it = c.analyses.find(name);
    if (it == c.analyses.end()) continue;
    for (const auto& row : it->second) {
      Row out{int64_t{c.chunk}};
      for (const auto& cell : row) std::visit([&](const auto& v) { out.emplace_back(v); }, cell);
      while (out.size() < n_columns + 1) out.emplace_back(std::numeric_limits<double>::quiet_NaN());
      w.row(out);
    }
  }
}

void layers(Writer& w, const Loaded& l) {
  for (const auto& c : l.chunks) {
    const std::pair<const char*, const analysis::Comparison*> comparisons[] = {
        {"diff", &c.diff},
        {"floor", c.floor ? &*c.floor : nullptr},
        {"floor_b", c.floor_b ? &*c.floor_b : nullptr}};
    for (const auto& [name, comparison] : comparisons) {
      if (comparison == nullptr) continue;
      for (const auto& r : comparison->layers) {
        w.row({std::string(name), int64_t{c.chunk}, int64_t{r.layer}, int64_t{r.pos},
               r.diff.rel_err, r.diff.cosine, r.diff.max_abs});
      }
    }
  }
}

void transplants(Writer& w, const Loaded& l) {
  for (const auto& c : l.chunks) {
    if (!c.transplants) continue;
    const auto& t = *c.transplants;
    for (const bool denoise : {true, false}) {
      for (const auto& r : denoise ? t.denoise : t.noise) {
        const size_t k = static_cast<size_t>(r.step - 1);  // steps are 1-based (records.h)
        w.row({int64_t{c.chunk}, std::string(denoise ? "denoise" : "noise"), int64_t{r.step},
               k < t.points.size() ? t.points[k] : std::string(), int64_t{r.pos}, r.kl});
      }
    }
  }
}

void flips(Writer& w, const Loaded& l) {
  for (const auto& f : analysis::flip_report(l.chunks).flips) {
    w.row({int64_t{f.chunk}, int64_t{f.pos}, int64_t{f.target}, text_of(l, f.target),
           int64_t{f.top_a}, text_of(l, f.top_a), f.p_top_a, f.margin_a, int64_t{f.top_b},
           text_of(l, f.top_b), f.kl});
  }
}

struct Table {
  std::string name;
  std::vector<std::string> columns;
  void (*write)(Writer&, const Loaded&);
};

const std::vector<Table>& tables() {
  static const std::vector<Table> t = {
      {"positions",
       {"chunk", "pos", "token_id", "token_text", "scored", "kl", "nll_a", "nll_b", "top1_a",
        "p_top1_a", "top1_b", "p_top1_b", "top5_a", "top5_b"},
       positions},
      {"layers", {"comparison", "chunk", "layer", "pos", "rel_err", "cosine", "max_abs"}, layers},
      {"transplants", {"chunk", "direction", "step", "point", "pos", "kl"}, transplants},
      {"flips",
       {"chunk", "pos", "token_id", "token_text", "top1_a", "top1_a_text", "p_top1_a", "margin_a",
        "top1_b", "top1_b_text", "kl"},
       flips},
  };
  return t;
}

}  // namespace

const std::vector<std::string>& export_tables() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& t : tables()) n.push_back(t.name);
    for (const auto& a : analysis::chunk_analyses()) n.push_back(a->name());
    return n;
  }();
  return names;
}

void export_table(std::ostream& os, const Loaded& l, const std::string& table,
                  const std::string& format) {
  for (const auto& t : tables()) {
    if (t.name != table) continue;
    if (table == "transplants" && !l.transplants) {
      throw InputError("'" + l.path +
                       "' holds no transplants (the diff ran without "
                       "--transplants)");
    }
    Writer w(os, t.columns, format == "csv");
    t.write(w, l);
    return;
  }
  if (const auto* a = analysis::find_chunk_analysis(table)) {
    const bool stored = std::any_of(l.chunks.begin(), l.chunks.end(),
                                    [&](const auto& c) { return c.analyses.count(table) > 0; });
    if (!stored) {
      throw InputError("'" + l.path + "' holds no " + table + " rows (the diff ran without " +
                       "--analysis " + table + ")");
    }
    std::vector<std::string> columns = {"chunk"};
    for (const auto& c : a->columns()) columns.push_back(c.name);
    Writer w(os, columns, format == "csv");
    analysis_rows(w, l, table, columns.size() - 1);
    return;
  }
  std::string names;
  for (const auto& n : export_tables()) names += (names.empty() ? "" : ", ") + n;
  throw InputError("no table '" + table + "' to export: " + names);
}

void write_kind_rows(std::ostream& os, const KindRows& t, const std::string& format) {
  if (format != "csv") {
    for (const auto& row : t.rows) {
      nlohmann::json j = nlohmann::json::object();
      for (size_t i = 0; i < row.size() && i < t.columns.size(); ++i) j[t.columns[i]] = row[i];
      os << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    return;
  }
  for (size_t i = 0; i < t.columns.size(); ++i) os << (i ? "," : "") << t.columns[i];
  os << "\n";
  for (const auto& row : t.rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      const auto& v = row[i];
      os << (i ? "," : "")
         << (v.is_null()      ? std::string()
             : v.is_string()  ? csv_field(v.get<std::string>())
             : v.is_boolean() ? std::string(v.get<bool>() ? "1" : "0")
                              : v.dump());  // a number: the shortest text that reads back
    }
    os << "\n";
  }
}

}  // namespace hd::report
