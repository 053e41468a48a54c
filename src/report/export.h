// `heterodyne export --positions`: one row per position of the diff, as CSV or JSON lines.
#pragma once
#include <ostream>
#include <string>

#include "report/show.h"

namespace hd::report {

// Columns: chunk, pos, token_id, token_text, scored, kl, nll_a, nll_b, top1_a, p_top1_a,
// top1_b, p_top1_b. token_id is the token the position predicts (the chunk's token pos+1).
// Numbers are printed so that they read back to the stored value exactly. `format` is "csv"
// or "jsonl" (anything else writes JSON lines; the CLI checks it first).
void export_positions(std::ostream& os, const Loaded& l, const std::string& format);

}  // namespace hd::report
