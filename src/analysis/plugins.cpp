// The registry of per-chunk analyses: adding one is one line here (docs/extending.md). An
// explicit list, not static registration objects: those are dropped by the linker from a
// static library when nothing else refers to their file.
#include "analysis/confidence.h"
#include "analysis/lens.h"
#include "analysis/plugin.h"
#include "analysis/routing.h"

namespace hd::analysis {

const std::vector<std::unique_ptr<ChunkAnalysis>>& chunk_analyses() {
  static const auto all = [] {
    std::vector<std::unique_ptr<ChunkAnalysis>> v;
    v.push_back(make_confidence_analysis());
    v.push_back(make_routing_analysis());
    v.push_back(make_routing_load_analysis());
    v.push_back(make_routing_transplant_analysis());
    v.push_back(make_lens_analysis());
    return v;
  }();
  return all;
}

const ChunkAnalysis* find_chunk_analysis(const std::string& name) {
  for (const auto& a : chunk_analyses()) {
    if (a->name() == name) return a.get();
  }
  return nullptr;
}

bool row_fits(const std::vector<ColumnDef>& columns, const CellRow& row) {
  if (row.size() > columns.size()) return false;
  for (size_t i = row.size(); i < columns.size(); ++i)
    if (!columns[i].added_later) return false;
  for (size_t i = 0; i < row.size(); ++i) {
    const auto t = columns[i].type;
    const bool ok = t == ColumnDef::Type::kInteger ? std::holds_alternative<int64_t>(row[i])
                    : t == ColumnDef::Type::kReal  ? std::holds_alternative<double>(row[i])
                                                   : std::holds_alternative<std::string>(row[i]);
    if (!ok) return false;
  }
  return true;
}

}  // namespace hd::analysis
