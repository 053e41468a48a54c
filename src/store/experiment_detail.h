// What the parts of store/experiment (creating and opening, rows, hashes) share; not for use
// outside store/.
#pragma once
#include <functional>
#include <set>
#include <string>

#include "common/sha256.h"

namespace hd::store {

class Database;
class Experiment;
class Statement;

namespace detail {

// Every table, with the key its rows are ordered by in the integrity serialization.
struct TableDef {
  const char* name;
  const char* order;
  const char* ddl;
};
inline constexpr TableDef kTables[] = {
    {"meta", "key", "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"},
    {"chunks", "chunk",
     "CREATE TABLE chunks (chunk INTEGER PRIMARY KEY, n_tokens INTEGER NOT NULL, seconds REAL NOT "
     "NULL)"},
    {"tokens", "chunk, pos",
     "CREATE TABLE tokens (chunk INTEGER, pos INTEGER, token_id INTEGER NOT NULL,"
     " PRIMARY KEY (chunk, pos)) WITHOUT ROWID"},
    {"vocab", "token_id", "CREATE TABLE vocab (token_id INTEGER PRIMARY KEY, text TEXT NOT NULL)"},
    {"positions", "comparison, chunk, pos",
     "CREATE TABLE positions (comparison TEXT, chunk INTEGER, pos INTEGER, target_id INTEGER NOT "
     "NULL,"
     " scored INTEGER NOT NULL, kl REAL, nll_a REAL, nll_b REAL, top1_a INTEGER, p_top1_a REAL,"
     " top1_b INTEGER, p_top1_b REAL, top5_a TEXT, top5_b TEXT,"
     " PRIMARY KEY (comparison, chunk, pos)) WITHOUT ROWID"},
    {"layers", "comparison, chunk, layer, pos",
     "CREATE TABLE layers (comparison TEXT, chunk INTEGER, layer INTEGER, pos INTEGER,"
     " rel_err REAL, cosine REAL, max_abs REAL,"
     " PRIMARY KEY (comparison, chunk, layer, pos)) WITHOUT ROWID"},
    {"transplants", "chunk, direction, step, pos",
     "CREATE TABLE transplants (chunk INTEGER, direction TEXT, step INTEGER, point TEXT NOT NULL,"
     " pos INTEGER, kl REAL, PRIMARY KEY (chunk, direction, step, pos)) WITHOUT ROWID"},
    {"residuals", "chunk, arm, layer",
     "CREATE TABLE residuals (chunk INTEGER, arm TEXT, layer INTEGER, n_tokens INTEGER NOT NULL,"
     " width INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (chunk, arm, layer)) WITHOUT ROWID"},
};

// A sweep's tables, made by its run (store/sweep_rows.h): the integrity hash covers them after
// the others where present. A kind's own tables (a floor's, a recommendation's, the example
// kind's) are listed nowhere: the hash covers them last, by name, in key order.
inline constexpr TableDef kSweepTables[] = {
    {"sweep_positions", "chunk, comparison, mask, pos",
     "CREATE TABLE IF NOT EXISTS sweep_positions (chunk INTEGER, comparison TEXT, mask INTEGER,"
     " pos INTEGER, kl REAL, nll REAL, PRIMARY KEY (chunk, comparison, mask, pos)) WITHOUT ROWID"},
    {"sweep_flips", "chunk, comparison, mask",
     "CREATE TABLE IF NOT EXISTS sweep_flips (chunk INTEGER, comparison TEXT, mask INTEGER,"
     " flips INTEGER, PRIMARY KEY (chunk, comparison, mask)) WITHOUT ROWID"},
};

// Whether the file holds table `name`.
bool has_table(Database& db, const char* name);

// The column `col` of the row `q` is on, in the tagged encoding every hash uses ('N'; 'I'
// int64; 'R' f64 bits; 'T'/'B' length + bytes; docs/experiment-format.md, *Integrity*).
std::string canonical_value(const Statement& q, int col);

// The hash resume checks of one stored unit (a diff's or sweep's chunk, a floor's group): the
// kind and configuration it came from, each followed by a newline, then what `rows` adds.
std::string unit_sha256(const Experiment& e, const std::function<void(Sha256&)>& rows);
// Adds every column of every row `q` gives, in the tagged encoding.
void hash_rows(Sha256& md, Statement& q);

// Resume's check of a kind's stored units (chunks, prompts, lengths): each must still hash as the
// hash stored with it (meta `key(unit)` against `sha(unit)`), or InputError "'<path>': <what>
// <unit> was changed after it was stored; it cannot be resumed (<again>)", since resume never
// adds to rows edited since. Returns `units`.
std::set<int> require_unchanged_units(const Experiment& e, std::set<int> units,
                                      const std::function<std::string(int)>& key,
                                      const std::function<std::string(int)>& sha,
                                      const std::string& what,
                                      const std::string& again = "run it again, with --force");

// The meta key of chunk `chunk`'s hash, and the hash itself: the chunk's rows (with its run
// time) and the configuration they came from, as resume checks them.
std::string chunk_hash_key(int chunk);
std::string chunk_sha256(Database& db, const Experiment& e, int chunk);

}  // namespace detail
}  // namespace hd::store
