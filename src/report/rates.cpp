#include "report/rates.h"

#include <fmt/format.h>

#include <cmath>

#include "common/json_number.h"

namespace hd::report {

using analysis::RateCI;

namespace {

// 1204 as "1,204": counts of positions are read, not parsed.
std::string grouped(double count) {
  const std::string digits = fmt::format("{:.0f}", count);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string percent(double x) { return fmt::format("{:.3g} %", 100 * x); }

std::string why_text(const RateCI& r, const char* unit) {
  switch (r.why) {
    case RateCI::Why::kNoVariation:
      return fmt::format("{} of {} {}", grouped(r.hits), grouped(static_cast<double>(r.n)), unit);
    case RateCI::Why::kOneChunk:
      return "1 chunk";
    case RateCI::Why::kNone:
      return fmt::format("no {}", unit);
    case RateCI::Why::kInterval:
      break;
  }
  return "";
}

}  // namespace

std::string rate_text(const RateCI& r, const char* unit) {
  switch (r.why) {
    case RateCI::Why::kInterval:
      return fmt::format("{} ({:.3g}–{:.3g})", percent(r.rate), 100 * r.lo, 100 * r.hi);
    case RateCI::Why::kNoVariation:
      return why_text(r, unit);
    case RateCI::Why::kOneChunk:
      return percent(r.rate) + " (n/a: 1 chunk)";
    case RateCI::Why::kNone:
      break;
  }
  return "—";
}

nlohmann::json rate_json(const RateCI& r, const char* unit) {
  const auto number = [](double x) { return std::isfinite(x) ? json_number(x) : nlohmann::json(); };
  nlohmann::json j = {{"rate", number(r.rate)}, {"lo", number(r.lo)}, {"hi", number(r.hi)},
                      {"n", r.n},               {"chunks", r.clusters}, {"text", rate_text(r, unit)}};
  j["why"] = r.has_interval() ? nlohmann::json()
             : r.why == RateCI::Why::kNoVariation ? nlohmann::json("no variation: " + why_text(r, unit))
                                                  : nlohmann::json(why_text(r, unit));
  return j;
}

}  // namespace hd::report
