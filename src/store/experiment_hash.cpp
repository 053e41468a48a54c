// An experiment's hashes and comparisons: the integrity hash over every stored value, each
// chunk's hash (what resume checks), and the first stored value a recomputed chunk differs in.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <set>

#include "common/sha256.h"
#include "errors.h"
#include "store/analysis_tables.h"
#include "store/experiment.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"

namespace hd::store {

using analysis::Comparison;
using detail::kTables;
using detail::TableDef;
using detail::chunk_hash_key;
using detail::chunk_sha256;
using detail::canonical_value;

// Canonical serialization (docs/experiment-format.md): every column as a tag byte and
// little-endian payload: 'N'; 'I' int64; 'R' IEEE-754 f64 bits; 'T'/'B' u64 length + bytes.
static void append_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string detail::canonical_value(const Statement& q, int col) {
  std::string out;  // the tag is appended as a char: GCC 12 warns falsely (-Wrestrict) on "N"
  switch (q.type(col)) {
    case SQLITE_NULL:
      out += 'N';
      break;
    case SQLITE_INTEGER:
      out += 'I';
      append_u64(out, static_cast<uint64_t>(q.integer(col)));
      break;
    case SQLITE_FLOAT: {
      const double d = q.real(col);
      uint64_t bits;
      std::memcpy(&bits, &d, 8);
      out += 'R';
      append_u64(out, bits);
      break;
    }
    case SQLITE_TEXT: {
      const std::string t = q.text(col);
      out += 'T';
      append_u64(out, t.size());
      out += t;
      break;
    }
    default: {
      const auto blob = q.blob(col);
      out += 'B';
      append_u64(out, blob.size());
      out.append(reinterpret_cast<const char*>(blob.data()), blob.size());
    }
  }
  return out;
}

// A value as a message shows it.
static std::string shown_value(const Statement& q, int col) {
  switch (q.type(col)) {
    case SQLITE_NULL:
      return "NULL";
    case SQLITE_INTEGER:
      return std::to_string(q.integer(col));
    case SQLITE_FLOAT:
      return fmt::format("{:.17g}", q.real(col));
    case SQLITE_TEXT: {
      const std::string t = q.text(col);
      return t.size() > 60 ? fmt::format("'{}…'", t.substr(0, 60)) : fmt::format("'{}'", t);
    }
    default:
      return fmt::format("<{} bytes>", q.blob(col).size());
  }
}

namespace {
// An SQL identifier as a quoted name, whatever a file calls its tables.
std::string quoted(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A table of the file that no list above names: a kind's own (kinds/<name>/).
struct OtherTable {
  std::string name;    // as hashed
  std::string select;  // every column, in key order then every column (a deterministic order)
};

// The tables of `db` not among `known` (nor SQLite's own), by name. Only what heterodyne writes
// is read: a virtual table (its module could be anything), or a hidden or generated column,
// makes the file damaged (InputError) before a row of it is read.
std::vector<OtherTable> other_tables(Database& db, const std::string& path,
                                     const std::vector<TableDef>& known) {
  std::vector<OtherTable> out;
  Statement q(db.handle(),
              "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
              "'sqlite_%' ORDER BY name");
  while (q.step()) {
    const std::string name = q.text(0);
    bool listed = false;
    for (const TableDef& t : known) listed = listed || name == t.name;
    if (listed) continue;
    const auto damaged = [&](const std::string& what) {
      return InputError("'" + path + "' is damaged: its table " + quoted(name) + " " + what +
                        ", which heterodyne never writes");
    };
    if (q.type(1) != SQLITE_TEXT || q.text(1).rfind("CREATE TABLE", 0) != 0)
      throw damaged("is not an ordinary table");
    std::vector<std::pair<int64_t, std::string>> key;
    std::string columns;
    Statement info(db.handle(), "SELECT name, pk, hidden FROM pragma_table_xinfo(?)");
    info.bind(1, std::string_view(name));
    while (info.step()) {
      if (info.integer(2) != 0) throw damaged("has a hidden or generated column");
      columns += (columns.empty() ? "" : ", ") + quoted(info.text(0));
      if (info.integer(1) > 0) key.push_back({info.integer(1), quoted(info.text(0))});
    }
    std::sort(key.begin(), key.end());
    std::string order;
    for (const auto& [i, column] : key) order += column + ", ";
    out.push_back({name, "SELECT " + columns + " FROM " + quoted(name) + " ORDER BY " + order +
                             columns});
  }
  return out;
}
}  // namespace

std::string Experiment::compute_integrity() const { return integrity_hash(true); }

std::string Experiment::integrity_hash(bool whole) const {
  // For each table in the fixed order above, its name and a newline, then every row in key
  // order; meta rows with key 'integrity_sha256' are left out: the hash cannot cover itself.
  // Not `whole`: the rows alone, without meta and the chunks' run times (rows_sha256).
  Sha256 md;
  // Then each plug-in analysis' table, by name, and a sweep's tables where present.
  std::vector<TableDef> tables(std::begin(kTables), std::end(kTables));
  std::vector<std::string> names;
  for (const auto& a : stored_analyses(*db_)) names.push_back(analysis_table(a));
  for (const auto& n : names) tables.push_back({n.c_str(), "chunk, row", ""});
  for (const auto& t : detail::kSweepTables) {
    if (detail::has_table(*db_, t.name)) tables.push_back(t);
  }
  // Last, every other table (a kind's own, kinds/<name>/), by name, its rows in primary-key
  // order: a kind declares its tables by creating them.
  const std::vector<OtherTable> others = other_tables(*db_, path_, tables);
  const auto hash_rows = [&](std::string_view name, const std::string& sql) {
    md.update(name.data(), name.size());
    md.update("\n", 1);
    const LengthLimit bound(db_->handle(),
                            name == "residuals" ? kMaxResidualBytes : kMaxFieldBytes);
    Statement q(db_->handle(), sql);
    while (q.step()) {
      for (int col = 0; col < q.columns(); ++col) {
        const std::string v = canonical_value(q, col);
        md.update(v.data(), v.size());
      }
    }
  };
  for (const auto& table : tables) {
    const std::string_view name = table.name;
    if (!whole && name == "meta") continue;
    std::string sql = std::string("SELECT ") +
                      (!whole && name == "chunks" ? "chunk, n_tokens" : "*") + " FROM " + table.name;
    if (std::string_view(table.name) == "meta") sql += " WHERE key != 'integrity_sha256'";
    sql += std::string(" ORDER BY ") + table.order;
    hash_rows(name, sql);
  }
  for (const OtherTable& t : others) hash_rows(t.name, t.select);
  return md.hex();
}

namespace {
// One stored row: where it is, its columns' names, canonical bytes and printed values.
struct Row {
  std::string where;  // "positions (diff, 0, 17)"
  std::vector<std::string> names, bytes, shown;
};
}  // namespace

// Every row that belongs to `chunk`, table by table in key order, with the vocabulary rows of
// the tokens it mentions. `with_seconds`: the chunk's run time, which a re-run never repeats.
static std::vector<Row> chunk_rows(Database& db, const Experiment& e, int chunk,
                                   bool with_seconds) {
  struct Part {
    const char* table;
    std::vector<std::string> key;  // the columns that name a row in messages, and order them
    std::string own_table = {};    // a plug-in analysis' table (then `table` is null)
  };
  static const Part kParts[] = {
      {"chunks", {"chunk"}},
      {"tokens", {"pos"}},
      {"positions", {"comparison", "pos"}},
      {"layers", {"comparison", "layer", "pos"}},
      {"transplants", {"direction", "step", "pos"}},
      {"residuals", {"arm", "layer"}},
  };
  std::vector<Row> rows;
  const auto collect = [&](const std::string& table, const std::vector<std::string>& key,
                           Statement& q) {
    while (q.step()) {
      Row r;
      std::string key_values;
      for (int col = 0; col < q.columns(); ++col) {
        const std::string name = q.name(col);
        if (name == "seconds" && !with_seconds) continue;
        r.names.push_back(name);
        r.bytes.push_back(canonical_value(q, col));
        r.shown.push_back(shown_value(q, col));
        if (std::find(key.begin(), key.end(), name) != key.end()) {
          key_values += (key_values.empty() ? "" : ", ") + r.shown.back();
        }
      }
      r.where = table + " (" + key_values + ")";
      rows.push_back(std::move(r));
    }
  };
  std::vector<Part> parts(std::begin(kParts), std::end(kParts));
  for (const auto& a : stored_analyses(db)) parts.push_back({nullptr, {"row"}, analysis_table(a)});
  for (const Part& p : parts) {
    const std::string table = p.table ? p.table : p.own_table;
    std::string order;
    for (const auto& k : p.key) order += (order.empty() ? "" : ", ") + k;
    const LengthLimit bound(db.handle(), table == "residuals" ? kMaxResidualBytes : kMaxFieldBytes);
    Statement q(db.handle(),
                fmt::format("SELECT * FROM {} WHERE chunk = ? ORDER BY {}", table, order));
    q.bind(1, int64_t{chunk});
    collect(table, p.key, q);
  }
  std::set<int32_t> ids;
  const analysis::ChunkResult c = e.read_chunk(chunk);
  ids.insert(c.tokens.begin(), c.tokens.end());
  for (const Comparison* cmp : analysis::comparisons_of(c)) {
    for (const auto& r : cmp->positions) {
      ids.insert(r.score.top_a.id.begin(), r.score.top_a.id.end());
      ids.insert(r.score.top_b.id.begin(), r.score.top_b.id.end());
    }
  }
  Statement voc(db.handle(), "SELECT * FROM vocab WHERE token_id = ?");
  for (int32_t id : ids) {
    voc.bind(1, int64_t{id});
    collect("vocab", {"token_id"}, voc);
    voc.reset();
  }
  return rows;
}

std::string detail::chunk_hash_key(int chunk) { return "chunk_sha256/" + std::to_string(chunk); }

// What resume checks: the chunk's rows (with its run time) and the configuration they came
// from, hashed when the chunk was stored.
std::string detail::chunk_sha256(Database& db, const Experiment& e, int chunk) {
  return unit_sha256(e, [&](Sha256& md) {
    for (const Row& r : chunk_rows(db, e, chunk, true)) {
      for (const auto& b : r.bytes) md.update(b.data(), b.size());
    }
  });
}

std::string detail::unit_sha256(const Experiment& e, const std::function<void(Sha256&)>& rows) {
  Sha256 md;
  for (const char* key : {"kind", "config"}) {
    md.update(e.meta(key).value_or(""));
    md.update("\n", 1);
  }
  rows(md);
  return md.hex();
}

std::set<int> detail::require_unchanged_units(const Experiment& e, std::set<int> units,
                                              const std::function<std::string(int)>& key,
                                              const std::function<std::string(int)>& sha,
                                              const std::string& what, const std::string& again) {
  for (const int u : units) {
    const auto recorded = e.meta(key(u));
    if (!recorded || *recorded != sha(u)) {
      throw InputError("'" + e.path() + "': " + what + " " + std::to_string(u) +
                       " was changed after it was stored; it cannot be resumed (" + again + ")");
    }
  }
  return units;
}

void detail::hash_rows(Sha256& md, Statement& q) {
  while (q.step()) {
    for (int col = 0; col < q.columns(); ++col) md.update(canonical_value(q, col));
  }
}

std::optional<std::string> Experiment::altered_chunks() const {
  for (int c : finished_chunks()) {
    const auto recorded = meta(chunk_hash_key(c));
    if (!recorded) {
      return "chunk " + std::to_string(c) + " has no recorded hash (rows added or edited by hand?)";
    }
    if (*recorded != chunk_sha256(*db_, *this, c)) {
      return "chunk " + std::to_string(c) +
             " was changed after it was stored (its rows no longer hash as recorded)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> Experiment::first_difference(int chunk,
                                                        const Experiment& recomputed) const {
  const std::vector<Row> stored = chunk_rows(*db_, *this, chunk, false);
  const std::vector<Row> again = chunk_rows(*recomputed.db_, recomputed, chunk, false);
  for (size_t i = 0; i < std::min(stored.size(), again.size()); ++i) {
    const Row& s = stored[i];
    const Row& r = again[i];
    if (s.where != r.where && s.names == r.names) {
      // A key column differs: report the row as a whole.
      return "chunk " + std::to_string(chunk) + ": stored row " + s.where + ", recomputed " +
             r.where;
    }
    for (size_t k = 0; k < s.bytes.size() && k < r.bytes.size(); ++k) {
      // A vocabulary piece that is not UTF-8 is a BLOB now and was TEXT before: the same bytes
      // under another type tag (canonical_value: the tag, then the length and the bytes).
      const bool same_piece = s.where.rfind("vocab ", 0) == 0 && s.names[k] == "text" &&
                              s.bytes[k].substr(1) == r.bytes[k].substr(1);
      if (s.bytes[k] != r.bytes[k] && !same_piece) {
        return "chunk " + std::to_string(chunk) + " " + s.where + " " + s.names[k] +
               ": stored " + s.shown[k] + ", recomputed " + r.shown[k];
      }
    }
  }
  if (stored.size() != again.size()) {
    return "chunk " + std::to_string(chunk) + ": " + std::to_string(stored.size()) +
           " stored rows, " + std::to_string(again.size()) + " recomputed";
  }
  return std::nullopt;
}

}  // namespace hd::store
