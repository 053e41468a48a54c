// What a figure's 95 % interval says against zero and against the numerical floor: two separate
// statements, worded once here so that show, --json, the report and the UI say the same thing.
#pragma once
#include <string>
#include <vector>

#include "analysis/stats.h"

namespace hd::analysis {

inline constexpr const char* kIncludesZero = "interval includes 0";
inline constexpr const char* kBelowFloor = "below the floor";
// Fewer chunks than this and every interval is flagged: a t-interval over 2-4 clusters is wide
// and its own width is poorly estimated.
inline constexpr size_t kFewChunks = 5;

struct Standing {
  bool includes_zero = false;  // the interval reaches 0 (|mean| - ci95 <= 0)
  bool below_floor = false;    // the floor is above 0 and the interval reaches down to it
};

// The upper end of a floor figure's interval (its mean where it has none).
double upper_end(const MeanCI& floor);

// `floor_hi`: the upper end of the floor that `value` is read against; 0 for a floor that is
// exactly 0 (bitwise), NaN for none. A value without an interval (one chunk) is read by its mean.
Standing standing(const MeanCI& value, double floor_hi);

// The statements that hold, in the fixed wording above ("" for none).
std::vector<std::string> standing_notes(const Standing& s);
std::string standing_text(const Standing& s);  // joined by "; "

// "2 chunks: intervals are wide" below kFewChunks chunks, else "".
std::string few_chunks_note(size_t n_chunks);

}  // namespace hd::analysis
