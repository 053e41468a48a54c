// The summary of a sweep (meta "sweep", what show prints), from its configuration, its
// combinations (meta "sweep_combinations") and every chunk's stored rows alone.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "store/sweep_rows.h"

namespace hd::run {

// chunks: every chunk's rows, in chunk order. InputError when there is none.
nlohmann::json sweep_summary(const nlohmann::json& config,
                             const std::vector<store::SweepChunkRows>& chunks,
                             const nlohmann::json& combinations);

}  // namespace hd::run
