// The tables of plug-in analyses (analysis/plugin.h) in an experiment file: one per analysis,
// "analysis_<name>" with columns (chunk, row, <the analysis' own columns>), made when a run
// first stores a row of it. Readers take the columns from the table itself, so a file holding
// an analysis this build does not know still reads, hashes and verifies.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "analysis/plugin.h"

namespace hd::store {

class Database;

// "analysis_<name>", for a name of lower-case letters, digits and '_' (InputError otherwise).
std::string analysis_table(const std::string& name);

// The analyses whose tables the file holds, by name, sorted.
std::vector<std::string> stored_analyses(Database& db);

// Stores one chunk's rows of analysis `name` (inside the caller's transaction).
void put_analysis_rows(Database& db, const std::string& name, int chunk,
                       const std::vector<analysis::CellRow>& rows);

// One chunk's rows of every stored analysis, checked: a value of another type than its column,
// or a gap in the row numbers, is damage (InputError naming the file).
std::map<std::string, std::vector<analysis::CellRow>> read_analysis_rows(Database& db,
                                                                         const std::string& path,
                                                                         int chunk);

// Every finished chunk's rows of one analysis, chunk by chunk (what a summary reads).
std::vector<analysis::StoredRow> read_analysis(Database& db, const std::string& path,
                                               const std::string& name);

}  // namespace hd::store
