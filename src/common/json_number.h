// JSON has no infinity or NaN (nlohmann writes both as null). Ratios that are legitimately
// infinite (one damaged head among clean ones, an error over a zero one) are written as the
// strings "inf" / "-inf"; NaN (0 / 0: nothing to compare) stays null.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>

namespace hd {

inline nlohmann::json json_number(double x) {
  if (std::isnan(x)) return nullptr;
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

}  // namespace hd
