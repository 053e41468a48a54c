// Which batch splits reproduce a reference run bit for bit, said in one line. Pure.
//
// Given the ubatch sizes tested and which of them gave logits bitwise equal to the reference,
// each rule that describes the identical set exactly is a candidate: multiples of m (m >= 2),
// the sizes that split the chunk into equal ubatches, every size from t up. A rule is claimed
// only when it is the one candidate: sparse sizes fit several rules alike (32, 64 and 128
// identical, 7 and 65 not, fit multiples of 2, 4, 8, 16 and 32), and then the identical sizes
// are listed with the rules they cannot tell apart. "From t up" names the untested sizes
// below t, where the change may lie. Nothing is assumed: every word follows from the rows.
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
