#include "analysis/against_floor.h"

#include <fmt/format.h>

#include <cmath>

namespace hd::analysis {

double upper_end(const MeanCI& floor) {
  return floor.mean + (std::isnan(floor.ci95) ? 0 : floor.ci95);
}

Standing standing(const MeanCI& value, double floor_hi, double floor_mean) {
  Standing s;
  s.ratio = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(value.mean)) return s;
  const bool has_interval = !std::isnan(value.ci95);
  const double low = std::fabs(value.mean) - (has_interval ? value.ci95 : 0);
  s.includes_zero = has_interval && low <= 0;
  // A floor of exactly 0 puts nothing below it: only "interval includes 0" can say that.
  s.below_floor = !std::isnan(floor_hi) && floor_hi > 0 && low <= floor_hi;
  s.above_zero_floor = floor_hi == 0 && value.mean != 0 && !s.includes_zero;
  const double of = std::isnan(floor_mean) ? floor_hi : floor_mean;
  if (std::isfinite(of) && of > 0 && value.mean != 0 && std::isfinite(value.mean))
    s.ratio = std::fabs(value.mean) / of;
  return s;
}

std::string ratio_text(double ratio) {
  if (!(ratio > 0) || !std::isfinite(ratio)) return "";
  const int digits = ratio >= 10 && ratio < 1e6 ? 0 : 2;
  return (digits == 0 ? fmt::format("{:.0f}", ratio) : fmt::format("{:.2g}", ratio)) + "× floor";
}

std::vector<std::string> standing_notes(const Standing& s) {
  std::vector<std::string> v;
  if (s.includes_zero) v.emplace_back(kIncludesZero);
  if (s.below_floor) v.emplace_back(kBelowFloor);
  if (s.above_zero_floor) v.emplace_back(kAboveZeroFloor);
  if (std::string r = ratio_text(s.ratio); !r.empty()) v.push_back(std::move(r));
  return v;
}

std::string standing_text(const Standing& s) {
  std::string out;
  for (const auto& n : standing_notes(s)) out += (out.empty() ? "" : "; ") + n;
  return out;
}

std::string rate_standing_text(const RateCI& value, const RateCI& floor) {
  if (floor.n == 0 || value.n == 0) return "";
  const double floor_hi = floor.has_interval() ? floor.hi : floor.rate;
  const double low = value.has_interval() ? value.lo : value.rate;
  if (floor_hi > 0 && low <= floor_hi) return kBelowFloor;
  if (floor.rate == 0) return value.rate == 0 ? "" : kAboveZeroFloor;
  return ratio_text(value.rate / floor.rate);
}

std::string few_chunks_note(size_t n_chunks) {
  if (n_chunks >= kFewChunks) return "";
  return std::to_string(n_chunks) + (n_chunks == 1 ? " chunk: no intervals" : " chunks") +
         (n_chunks == 1 ? "" : ": intervals are wide");
}

std::string infinite_kl_note(const ComparisonSummary& s) {
  std::string out;
  if (s.n_kl_infinite > 0) {
    out = "KL is +inf at " + std::to_string(s.n_kl_infinite) + " of " +
          std::to_string(s.n_scored) + " positions (first: chunk " +
          std::to_string(s.first_infinite_chunk) + " position " +
          std::to_string(s.first_infinite_pos) +
          "), where B gives a token no probability (a -inf logit) that A gives some; the mean "
          "KL, its interval and percentiles are over the other positions";
  }
  if (s.n_nll_infinite > 0) {
    out += (out.empty() ? "" : "; ") + std::string("an arm gives the next token no probability at ") +
           std::to_string(s.n_nll_infinite) + (s.n_nll_infinite == 1 ? " position" : " positions") +
           ", which the PPLs leave out";
  }
  return out;
}

}  // namespace hd::analysis
