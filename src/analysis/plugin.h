// A per-chunk analysis that plugs into diff. It names itself, declares the rows it stores (its
// own table in the experiment file: docs/experiment-format.md), computes them from one chunk's
// numbers and summarizes stored rows as a table that show, --json, the report and the web UI
// draw without knowing the analysis. Adding one is one file here and one line in
// plugins.cpp (docs/extending.md has a worked example).
//
// An analysis is a pure function of what it is given: no llama.cpp, no files, no clocks. Its
// rows are stored, hashed, resumed and re-verified bit for bit like every other row.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "analysis/records.h"

namespace hd::analysis {

struct ColumnDef {
  enum class Type { kInteger, kReal, kText };
  std::string name;
  Type type = Type::kReal;
  std::string meaning;  // one line, for docs/experiment-format.md and --help
};

// What one chunk gives an analysis. Logit rows are for positions first_output .. n-1
// (n_vocab floats each; position p predicts token p + 1), as both arms computed them.
struct ChunkInput {
  int chunk = 0;
  std::span<const int32_t> tokens;
  int first_output = 0;
  int n_vocab = 0;
  std::span<const float> logits_a, logits_b;
  const Comparison* diff = nullptr;   // A vs B, scored per position
  const Comparison* floor = nullptr;  // A vs A re-split; null without the floor
  // The rows an arm ('a' or 'b') computed at a point the analysis declared, [rows][width]
  // for the positions first_row .. n-1 of that point.
  std::function<std::span<const float>(char arm, const std::string& point)> captured;
};

// Stored rows of every finished chunk: the chunk, then the analysis' own columns.
struct StoredRow {
  int chunk = 0;
  CellRow cells;
};

// What a summary shows: a titled table and lines under it. Plain data; report/ renders it as
// text, JSON, HTML and the web UI's table.
struct SummaryTable {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> notes;
};

class ChunkAnalysis {
 public:
  virtual ~ChunkAnalysis() = default;
  // Lower case, digits and '_': the --analysis value and the table "analysis_<name>".
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;  // one line for --help
  // Graph points (l_out-3, ...) both arms must capture for it, for a model of n_layer layers.
  // These are graph names, which differ by architecture (`heterodyne points --model M` prints a
  // model's): no analysis declares any yet; one that does should take the point map instead.
  virtual std::vector<std::string> points(int n_layer) const {
    (void)n_layer;
    return {};
  }
  // The columns of its rows, in order (a row index and the chunk are added by the store).
  virtual std::vector<ColumnDef> columns() const = 0;
  virtual std::vector<CellRow> compute(const ChunkInput& in) const = 0;
  // From the stored rows alone, so that show prints the same for a file, a resumed run and a
  // verified one (verify compares the rows themselves, bit for bit).
  virtual SummaryTable summarize(const std::vector<StoredRow>& rows) const = 0;
};

// Every analysis this build has, in registration order (plugins.cpp).
const std::vector<std::unique_ptr<ChunkAnalysis>>& chunk_analyses();
// The one named `name`, or null.
const ChunkAnalysis* find_chunk_analysis(const std::string& name);

// Checks a row against the columns (count and types): the store refuses rows that do not fit.
bool row_fits(const std::vector<ColumnDef>& columns, const CellRow& row);

}  // namespace hd::analysis
