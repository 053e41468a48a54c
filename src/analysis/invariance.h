// Which batch splits reproduce a reference run bit for bit, said in one line. Pure.
//
// Given the ubatch sizes tested and which of them gave logits bitwise equal to the reference,
// the first rule that describes the identical set exactly is reported: every size, none,
// multiples of m (the smallest m >= 2 that fits, with at least one size tested off the
// pattern), sizes that split the chunk into equal ubatches, sizes from t up; otherwise the
// identical sizes are listed as ranges. Nothing is assumed: a rule is said only when the data
// fit it.
#pragma once
#include <string>
#include <vector>

namespace hd::analysis {

struct InvarianceRow {
  int ubatch = 0;  // effective: at most the chunk
  bool identical = false;
};

std::string invariance_pattern(const std::vector<InvarianceRow>& rows, int chunk);

}  // namespace hd::analysis
