// `heterodyne export`: the stored rows of a diff, one table at a time, as CSV or JSON lines.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "report/show.h"

namespace hd::report {

// The tables, in the order --help lists them; "positions" is the default.
//   positions    chunk, pos, token_id, token_text, scored, kl, nll_a, nll_b, top1_a, p_top1_a,
//                top1_b, p_top1_b (token_id: the token the position predicts, the chunk's pos+1)
//   layers       comparison (diff: A vs B; floor: A vs A re-split), chunk, layer, pos, rel_err,
//                cosine, max_abs
//   transplants  chunk, direction (denoise | noise), step, point, pos, kl
//                …, top5_a, top5_b (each arm's top-5 as JSON text [[id, p], …])
//   flips        chunk, pos, token_id, token_text, top1_a, top1_a_text, p_top1_a, margin_a,
//                top1_b, top1_b_text, kl (the scored positions where the arms' top-1 differ)
//   then every plug-in analysis by name (lens, confidence, routing, …): chunk and its columns
//   (docs/experiment-format.md, analysis_<name>)
const std::vector<std::string>& export_tables();

// Writes `table` ("positions", …) of `l` in `format` ("csv" or "jsonl"). Numbers are printed so
// that they read back to the stored value exactly. InputError when the table is unknown, or
// when the file has none of its rows (transplants of a diff run without --transplants).
void export_table(std::ostream& os, const Loaded& l, const std::string& table,
                  const std::string& format);

// A kind's own table (kinds/kind.h export_rows: a file without per-position rows): its columns
// and rows, each value a JSON number, string, bool or null (an empty CSV field).
struct KindRows {
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;
  std::string integrity;  // the file's verdict (store::kIntegrityMismatch: export warns)
};
void write_kind_rows(std::ostream& os, const KindRows& t, const std::string& format);

}  // namespace hd::report
