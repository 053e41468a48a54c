// The version report: top-1 flips first, with where they form, for runs whose arms differ in
// the llama.cpp build (or on request, show --flips). Perplexity barely moves when a handful of
// greedy answers change; this names them.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>

#include "report/show.h"

namespace hd::report {

// Whether the arms ran different llama.cpp builds (config a/b "llama_build").
bool compares_builds(const Loaded& l);

void print_flips(std::ostream& os, const Loaded& l, int max_rows = 20);
nlohmann::json flips_json(const Loaded& l);

}  // namespace hd::report
