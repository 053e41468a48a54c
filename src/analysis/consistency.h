// Whether the chunks of one run fit together as a run writes them: the summaries index rows by
// restore point and position, so chunks that disagree (a file edited by hand or damaged) are
// refused before any summary is taken.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "analysis/records.h"

namespace hd::analysis {

// A one-line description of the first inconsistency, or nullopt. Checked: transplants in all
// chunks or none, the same restore points in every chunk, every transplant row at a position
// the diff scored, a floor row for every diff row (when there is a floor).
std::optional<std::string> chunks_problem(const std::vector<ChunkResult>& chunks);

}  // namespace hd::analysis
