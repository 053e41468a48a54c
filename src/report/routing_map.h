// `show run.hdy --routing`: the routing analyses' tables, then a layer × position map of where
// B chose other experts than A (from the stored rows of analysis_routing).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "analysis/plugin.h"

namespace hd::report {

struct Loaded;

// The map as lines of text, the first few chunks (show --routing prints it; show --json, the
// report and the web UI carry it as "routing_map").
std::vector<std::string> routing_map(const std::vector<analysis::StoredRow>& rows);

// InputError when the run has no routing rows (it was made without --routing).
void print_routing(std::ostream& os, const Loaded& l);

}  // namespace hd::report
