#include "store/analysis_tables.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cmath>
#include <limits>

#include "errors.h"
#include "store/sqlite.h"

namespace hd::store {

using analysis::Cell;
using analysis::CellRow;
using analysis::ColumnDef;

static bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

std::string analysis_table(const std::string& name) {
  if (!valid_name(name)) throw InputError("'" + name + "' cannot name an analysis table");
  return "analysis_" + name;
}

std::vector<std::string> stored_analyses(Database& db) {
  std::vector<std::string> out;
  Statement q(db.handle(),
              "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'analysis\\_%' "
              "ESCAPE '\\' ORDER BY name");
  while (q.step()) {
    const std::string name = q.text(0).substr(std::string("analysis_").size());
    // Skipping it would leave its rows out of every hash: a file with one is not ours.
    if (!valid_name(name))
      throw InputError("the experiment holds a table '" + q.text(0) +
                       "' that no heterodyne run writes (damaged, or edited by hand)");
    out.push_back(name);
  }
  return out;
}

static const char* sql_type(ColumnDef::Type t) {
  switch (t) {
    case ColumnDef::Type::kInteger:
      return "INTEGER";
    case ColumnDef::Type::kReal:
      return "REAL";
    case ColumnDef::Type::kText:
      return "TEXT";
  }
  return "REAL";
}

// The columns a table was made with, after chunk and row: (name, declared type).
static std::vector<std::pair<std::string, std::string>> own_columns(Database& db,
                                                             const std::string& table) {
  std::vector<std::pair<std::string, std::string>> out;
  Statement q(db.handle(), "SELECT name, type FROM pragma_table_info(?) ORDER BY cid");
  q.bind(1, std::string_view(table));
  while (q.step()) out.emplace_back(q.text(0), q.text(1));
  if (out.size() >= 2 && out[0].first == "chunk" && out[1].first == "row")
    out.erase(out.begin(), out.begin() + 2);
  return out;
}

void put_analysis_rows(Database& db, const std::string& name, int chunk,
                       const std::vector<CellRow>& rows) {
  const analysis::ChunkAnalysis* a = analysis::find_chunk_analysis(name);
  if (a == nullptr) throw RuntimeError("no analysis is named '" + name + "'");
  const auto columns = a->columns();
  const std::string table = analysis_table(name);
  std::string ddl = "CREATE TABLE IF NOT EXISTS " + table + " (chunk INTEGER, row INTEGER";
  std::string marks = "?, ?";
  for (const auto& c : columns) {
    ddl += ", \"" + c.name + "\" " + sql_type(c.type);
    marks += ", ?";
  }
  db.exec(ddl + ", PRIMARY KEY (chunk, row)) WITHOUT ROWID");
  // A file written before a column was added keeps its table: its rows go in without it.
  const size_t kept = std::min(columns.size(), own_columns(db, table).size());
  marks.resize(std::string("?, ?").size() + kept * std::string(", ?").size());
  Statement ins(db.handle(), "INSERT INTO " + table + " VALUES (" + marks + ")");
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!analysis::row_fits(columns, rows[r]) || rows[r].size() < kept)
      throw RuntimeError("a row of analysis '" + name + "' does not fit its columns");
    ins.bind(1, int64_t{chunk}).bind(2, static_cast<int64_t>(r));
    for (size_t k = 0; k < kept; ++k) {
      const int i = static_cast<int>(k) + 3;
      std::visit(
          [&](const auto& v) {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
              ins.bind(i, std::string_view(v));
            else
              ins.bind(i, v);
          },
          rows[r][k]);
    }
    ins.run();
  }
}

namespace {

// A table's own columns after (chunk, row), with the type each was declared with.

// The value at `col`, of the type its column was declared with; nullopt when it is not.
std::optional<Cell> read_cell(const Statement& q, int col, const std::string& type) {
  const int t = q.type(col);
  if (type == "INTEGER" && t == SQLITE_INTEGER) return Cell{q.integer(col)};
  if (type == "TEXT" && t == SQLITE_TEXT) return Cell{q.text(col)};
  if (type == "REAL") {
    if (t == SQLITE_FLOAT) return Cell{q.real(col)};
    if (t == SQLITE_NULL)
      return Cell{std::numeric_limits<double>::quiet_NaN()};  // NaN is stored as NULL
  }
  return std::nullopt;
}

// Rows of `table` (where `where` says), each checked; calls fn(chunk, row number, cells).
template <class Fn>
void read_rows(Database& db, const std::string& path, const std::string& table,
               const std::string& where, int chunk, Fn fn) {
  const auto cols = own_columns(db, table);
  Statement q(db.handle(), "SELECT * FROM " + table + where + " ORDER BY chunk, row");
  if (chunk >= 0) q.bind(1, int64_t{chunk});
  while (q.step()) {
    if (q.columns() != static_cast<int>(cols.size()) + 2 || q.type(0) != SQLITE_INTEGER ||
        q.type(1) != SQLITE_INTEGER) {
      throw InputError("'" + path + "' is damaged: its table " + table + " has a malformed row");
    }
    CellRow cells;
    for (size_t k = 0; k < cols.size(); ++k) {
      auto c = read_cell(q, static_cast<int>(k) + 2, cols[k].second);
      if (!c) {
        throw InputError(
            fmt::format("'{}' is damaged: chunk {} row {} of {} holds a value of "
                        "another type in column {}",
                        path, q.integer(0), q.integer(1), table, cols[k].first));
      }
      cells.push_back(std::move(*c));
    }
    fn(q.integer(0), q.integer(1), std::move(cells));
  }
}

}  // namespace

std::map<std::string, std::vector<CellRow>> read_analysis_rows(Database& db,
                                                               const std::string& path, int chunk) {
  std::map<std::string, std::vector<CellRow>> out;
  for (const auto& name : stored_analyses(db)) {
    std::vector<CellRow> rows;
    read_rows(db, path, analysis_table(name), " WHERE chunk = ?", chunk,
              [&](int64_t, int64_t row, CellRow cells) {
                if (row != static_cast<int64_t>(rows.size())) {
                  throw InputError(
                      fmt::format("'{}' is damaged: chunk {} has a gap in the rows "
                                  "of analysis {}",
                                  path, chunk, name));
                }
                rows.push_back(std::move(cells));
              });
    if (!rows.empty()) out[name] = std::move(rows);
  }
  return out;
}

std::vector<analysis::StoredRow> read_analysis(Database& db, const std::string& path,
                                               const std::string& name) {
  std::vector<analysis::StoredRow> out;
  read_rows(db, path, analysis_table(name), " WHERE chunk IN (SELECT chunk FROM chunks)", -1,
            [&](int64_t chunk, int64_t, CellRow cells) {
              out.push_back({static_cast<int>(chunk), std::move(cells)});
            });
  return out;
}

}  // namespace hd::store
