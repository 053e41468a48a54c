#include "report/length_curve.h"

#include <fmt/format.h>

namespace hd::report {

void print_length_curve(std::ostream& os, const nlohmann::json& r) {
  os << fmt::format("{:>8} {:>12} {:>12} {:>12} {:>12} {:>8}\n", "length", "rel err", "max |Δ|",
                    "mean KL", "max KL", "flips");
  for (const auto& row : r["rows"]) {
    os << fmt::format("{:>8} {:>12.4g} {:>12.4g} {:>12.4g} {:>12.4g} {:>8}\n",
                      row["length"].get<int>(), row["rel_err"].get<double>(),
                      row["max_abs"].get<double>(), row["mean_kl"].get<double>(),
                      row["max_kl"].get<double>(), row["top1_flips"].get<int>());
  }
  os << "\nrel err = ||Δ|| / ||A|| of the last layer's residual over all positions; "
        "KL(A || B) per position\n";
}

}  // namespace hd::report
