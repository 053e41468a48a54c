// `heterodyne show`: the totals of a diff as a terminal table or JSON, and the worst tokens.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/plugin.h"
#include "analysis/records.h"
#include "analysis/summary.h"
#include "analysis/transplant_summary.h"

namespace hd::report {

// Everything show needs, read once from the experiment file.
struct Loaded {
  std::string path;
  std::string status;
  std::string
      integrity;  // "ok", "MISMATCH" (the file was changed after it was sealed), "not sealed"
  nlohmann::json config;
  nlohmann::json provenance;
  std::vector<analysis::ChunkResult> chunks;
  std::map<int32_t, std::string> pieces;
  analysis::Summary summary;
  std::optional<analysis::TransplantSummary> transplants;  // with --transplants
  std::vector<std::pair<std::string, analysis::SummaryTable>> analyses;  // plug-ins, by name
  // The maps analyses draw from their rows (ChunkAnalysis::map: routing's), by name.
  std::map<std::string, std::vector<std::string>> maps;
  // Every known plug-in whose rows have a "pos" column (the lens, routing): its column names
  // and rows, for the result document's per-token rows (the page's pinned token).
  struct PositionRows {
    std::vector<analysis::ColumnDef> columns;
    std::vector<analysis::StoredRow> rows;
  };
  std::map<std::string, PositionRows> position_rows;
};

// position_rows: also the per-position plug-in rows (only the result document draws them).
// The file must be of a kind that holds per-position rows: kinds::load_positions checks that.
Loaded load_experiment(const std::string& path, bool position_rows = false);

nlohmann::json summary_json(const Loaded& l, int worst);
void print_summary(std::ostream& os, const Loaded& l);
// Several experiments side by side, one row each (a quantization ladder): mean KL, top-1 change
// rate and PPL of B, the floor of each next to it.
void print_ladder(std::ostream& os, const std::vector<Loaded>& runs);

// The `n` scored positions with the largest KL, with their text and both arms' top-5.
void print_worst(std::ostream& os, const Loaded& l, int n);
// One position as print_worst shows it: "C:P", KL and NLLs, the text before it with the
// predicted token in brackets, both arms' top-5. P is the predicting position (its logits
// predict token P + 1), as in the stored rows, export, the report and the UI.
void print_position_row(std::ostream& os, const Loaded& l, const analysis::ChunkResult& c,
                        const analysis::PositionRow& r);

// A token's stored text, or "<id>" when the file has none for it.
std::string piece_text(const Loaded& l, int32_t id);

// An arm's -fa as asked and, where llama.cpp ran another value, that one: "auto→on", "on→off"
// (llama.cpp turns flash attention off for Grok). `arm`: the provenance's arms.a or arms.b.
std::string flash_attn_text(const nlohmann::json& arm);

// A token's text made printable on one line (newlines and tabs shown as escapes).
std::string printable(const std::string& piece);

}  // namespace hd::report
