// The summaries of a run's plug-in analyses (analysis/plugin.h), drawn without knowing them:
// each is a titled table, printed by show, written by --json (summary "analyses") and drawn by
// the report and the web UI (web/src/analyses.ts) from that JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/plugin.h"

namespace hd::store {
class Experiment;
}

namespace hd::report {

using NamedSummary = std::pair<std::string, analysis::SummaryTable>;

// Every analysis the file holds rows of, summarized from those rows, by name. One this build
// does not know is listed with a note (its rows are kept, and verify still compares them).
std::vector<NamedSummary> summarize_analyses(const store::Experiment& e);

// {"title", "columns", "rows": [[...]], "notes"}; numbers that are not finite are null.
nlohmann::json summary_table_json(const analysis::SummaryTable& t);
void print_summary_table(std::ostream& os, const analysis::SummaryTable& t);

struct Loaded;

// show --<flag>: the tables of the analyses whose show flag it is (ChunkAnalysis::shortcut),
// each with the map it draws. InputError when the run has none of them.
void print_analyses_alone(std::ostream& os, const Loaded& l, const std::string& flag);

}  // namespace hd::report
