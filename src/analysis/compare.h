// Bitwise comparison of two results of the same chunk: what verify reports.
#pragma once
#include <optional>
#include <string>

#include "analysis/records.h"

namespace hd::analysis {

// The first stored number that differs, described in one line; nullopt when every number is
// bitwise identical (wall times are provenance, not results, and are not compared).
std::optional<std::string> first_mismatch(const ChunkResult& stored, const ChunkResult& again);

}  // namespace hd::analysis
