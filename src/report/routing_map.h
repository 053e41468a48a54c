// `show run.hdy --routing`: the routing analyses' tables, then a layer × position map of where
// B chose other experts than A (from the stored rows of analysis_routing).
#pragma once
#include <ostream>
#include <vector>

#include "analysis/plugin.h"

namespace hd::report {

struct Loaded;

// InputError when the run has no routing rows (it was made without --routing).
void print_routing(std::ostream& os, const Loaded& l);

}  // namespace hd::report
