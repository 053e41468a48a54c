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
#include "analysis/stats.h"

namespace hd::analysis {

struct ColumnDef {
  enum class Type { kInteger, kReal, kText };
  std::string name;
  Type type = Type::kReal;
  std::string meaning;  // one line, for docs/experiment-format.md and --help
  // Added after files were written without it: only trailing columns may be; a row of such a
  // file ends before them (row_fits), and summarize reads them only where the row has them.
  bool added_later = false;
  // An INTEGER column that holds a token id: the page shows it as the token's text.
  bool token = false;
};

// The flags that name an analysis without --analysis: `diff --<diff_flag>` adds it (analyses
// sharing a flag are added together: --routing adds routing and routing_load), `show
// --<show_flag>` prints its table alone (with those sharing the flag, and their maps). Empty:
// no such flag.
struct Shortcut {
  std::string diff_flag, diff_help;
  std::string show_flag, show_help;
};

// The points of the model an analysis may read, as the survey proved them on it
// (engine/points.h, `heterodyne points --model M`): graph names, "" on a layer without one.
struct ModelPoints {
  int n_layer = 0;
  std::vector<std::string> router;         // the router's probabilities [n_expert] per position
  std::vector<std::string> route_experts;  // the experts chosen [n_used] (ids as floats), best first
  std::vector<std::string> route_weights;  // the weights that mix their outputs [n_used]
  int64_t n_expert = 0, n_expert_used = 0;
  bool router_logits = false;  // the router point holds logits (gpt-oss), not probabilities
  std::string no_routing, no_routing_transplant;  // why not, "" when they can be read / written
  // The residual stream after each layer (l_out-N), the last one the final norm's input;
  // `no_residual_writes`: why they cannot all be read and written ("" when they can).
  std::vector<std::string> residual;
  std::string no_residual_writes;
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
  const Comparison* floor = nullptr;    // A vs A re-split; null without the floor
  const Comparison* floor_b = nullptr;  // B vs B re-split; null without it
  // The rows an arm ('a', 'b', 'f' for A's floor: A re-split, 'g' for B's: B re-split)
  // computed at a point the analysis declared: empty for 'f' and 'g' without that floor.
  struct Rows {
    std::span<const float> data;  // [n - first_pos][width], row-major
    int64_t width = 0;
    int first_pos = 0;  // the position of row 0 (first_output where the graph keeps only those)
  };
  std::function<Rows(char arm, const std::string& point)> captured;
  const ModelPoints* points = nullptr;  // the model's, as points() and unavailable() saw them
  // Logits [n - first_output][n_vocab] of `target` ('a' or 'b') run again on this chunk with
  // each of `points` (declared by the analysis) overwritten by the other arm's rows: an
  // intervention. Valid until the next call.
  std::function<std::span<const float>(char target, const std::vector<std::string>& points)> rerun;
  // Logits of `arm` ('a' or 'b') run again on this chunk with its own rows of point `from`
  // written over its point `into` (as wide, later in the graph), at the positions `into` keeps:
  // the logit lens writes a layer's residual as the final norm's input. Valid until the next
  // call.
  std::function<std::span<const float>(char arm, const std::string& into, const std::string& from)>
      rewrite_own;
};

// A number cell as a double (an INTEGER column read as a count).
inline double cell_real(const Cell& c) {
  if (const auto* i = std::get_if<int64_t>(&c)) return static_cast<double>(*i);
  return std::get<double>(c);
}

// Stored rows of every finished chunk: the chunk, then the analysis' own columns.
struct StoredRow {
  int chunk = 0;
  CellRow cells;
};

// A summary's cell: a count, a number, a label, or a rate with its interval inside [0, 1]
// (stats.h), which report/ prints as "7.12 % (5.20–9.31)", "0 of 1,204 positions" or
// "50 % (n/a: 1 chunk)" and writes to JSON with its bounds (null, and why, where it has none).
using SummaryCell = std::variant<int64_t, double, std::string, RateCI>;

// What a summary shows: a titled table and lines under it. Plain data; report/ renders it as
// text, JSON, HTML and the web UI's table.
struct SummaryTable {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<SummaryCell>> rows;
  std::vector<std::string> notes;
};

class ChunkAnalysis {
 public:
  virtual ~ChunkAnalysis() = default;
  // Lower case, digits and '_': the --analysis value and the table "analysis_<name>".
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;  // one line for --help
  // Why it cannot run on this model, one line ("" when it can): the run refuses it with this.
  virtual std::string unavailable(const ModelPoints& m) const {
    (void)m;
    return "";
  }
  // Graph points every arm (the floor's too) must capture for it on this model.
  virtual std::vector<std::string> points(const ModelPoints& m) const {
    (void)m;
    return {};
  }
  // The columns of its rows, in order (a row index and the chunk are added by the store).
  virtual std::vector<ColumnDef> columns() const = 0;
  virtual std::vector<CellRow> compute(const ChunkInput& in) const = 0;
  // From the stored rows alone, so that show prints the same for a file, a resumed run and a
  // verified one (verify compares the rows themselves, bit for bit).
  virtual SummaryTable summarize(const std::vector<StoredRow>& rows) const = 0;
  virtual Shortcut shortcut() const { return {}; }
  // A text map drawn from the stored rows under its table (show --<show_flag>; show --json,
  // the report and the web UI carry it as "<name>_map"): routing's layer × position map of
  // changed experts. Empty: none. `draws_map`: whether it ever does (show reads its rows then).
  virtual bool draws_map() const { return false; }
  virtual std::vector<std::string> map(const std::vector<StoredRow>& rows) const {
    (void)rows;
    return {};
  }
};

// Every analysis this build has, in registration order (plugins.cpp).
const std::vector<std::unique_ptr<ChunkAnalysis>>& chunk_analyses();
// The one named `name`, or null.
const ChunkAnalysis* find_chunk_analysis(const std::string& name);

// Checks a row against the columns (count and types): the store refuses rows that do not fit.
bool row_fits(const std::vector<ColumnDef>& columns, const CellRow& row);

}  // namespace hd::analysis
