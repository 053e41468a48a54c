// `heterodyne show` for a sweep: every combination, the floor, Shapley values and main effects
// with their intervals, interactions.
#pragma once
#include <ostream>

#include "report/stored_result.h"

namespace hd::report {

void print_sweep(std::ostream& os, const LoadedResult& l);

}  // namespace hd::report
