// What a figure's 95 % interval says against zero and against the numerical floor: two separate
// statements, worded once here so that show, --json, the report and the UI say the same thing.
#pragma once
#include <limits>
#include <string>
#include <vector>

#include "analysis/stats.h"
#include "analysis/summary.h"

namespace hd::analysis {

inline constexpr const char* kIncludesZero = "interval includes 0";
inline constexpr const char* kBelowFloor = "within the floor";
inline constexpr const char* kAboveZeroFloor = "above a zero floor";
// Fewer chunks than this and every interval is flagged: a t-interval over 2-4 clusters is wide
// and its own width is poorly estimated.
inline constexpr size_t kFewChunks = 5;

struct Standing {
  bool includes_zero = false;     // the interval reaches 0 (|mean| - ci95 <= 0)
  bool below_floor = false;       // the floor is above 0 and the interval reaches down to it
  bool above_zero_floor = false;  // the floor is exactly 0 (bitwise) and the value is not
  double ratio = 0;               // |mean| / the floor's mean where both are above 0, else NaN
};

// The upper end of a floor figure's interval (its mean where it has none).
double upper_end(const MeanCI& floor);

// `floor_hi`: the upper end of the floor that `value` is read against; 0 for a floor that is
// exactly 0 (bitwise), NaN for none; `floor_mean`: the floor's own figure, which the ratio is
// taken to (floor_hi where NaN). A value without an interval (one chunk) is read by its mean.
Standing standing(const MeanCI& value, double floor_hi,
                  double floor_mean = std::numeric_limits<double>::quiet_NaN());

// A floor as a figure is read against it: its interval's upper end and its mean (NaN: none).
struct FloorRef {
  double hi = std::numeric_limits<double>::quiet_NaN();
  double mean = std::numeric_limits<double>::quiet_NaN();
};
inline Standing standing(const MeanCI& value, const FloorRef& floor) {
  return standing(value, floor.hi, floor.mean);
}

// "31× floor", "1.5× floor", "0.42× floor": the ratio as every view words it.
std::string ratio_text(double ratio);

// The statements that hold, in the fixed wording above, then the ratio ("" for none).
std::vector<std::string> standing_notes(const Standing& s);
std::string standing_text(const Standing& s);  // joined by "; "

// A rate (top-1 changes, expert changes) read against the floor's rate, in the words above:
// "within the floor" where the value's interval reaches down to the floor's upper end, "above
// a zero floor", else the ratio of the two rates; "" where either has no positions.
std::string rate_standing_text(const RateCI& value, const RateCI& floor);

// "2 chunks: intervals are wide" below kFewChunks chunks, else "".
std::string few_chunks_note(size_t n_chunks);

// Where KL(A || B) is +inf at some positions (B masks a token A gives mass), one line saying
// how many, where the first is, and that the means leave them out; "" where there are none.
// The same words in show, its JSON and the pages.
std::string infinite_kl_note(const ComparisonSummary& s);

}  // namespace hd::analysis
