// `heterodyne show` for a floor exploration: per ubatch (× threads × flash attention) whether
// the logits are bitwise those of the reference run, how far they are when not, and the
// pattern found in the data.
#pragma once
#include <ostream>

#include "report/stored_result.h"

namespace hd::report {

void print_floor(std::ostream& os, const LoadedResult& l);

}  // namespace hd::report
