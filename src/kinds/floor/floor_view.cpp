#include "kinds/floor/floor_view.h"

#include <fmt/format.h>

namespace hd::report {

void print_floor(std::ostream& os, const LoadedResult& l) {
  const auto& r = l.result;
  const auto& ref = r["reference"];
  os << fmt::format("floor: {}, K {} / V {}, {} chunk(s) of {} tokens; reference ubatch {}, {} "
                    "threads, flash attention {}\n\n",
                    r["model"].get<std::string>(), r["cache_type_k"].get<std::string>(),
                    r["cache_type_v"].get<std::string>(), r["chunks"].get<int>(),
                    r["chunk"].get<int>(), ref["n_ubatch"].get<int>(), ref["n_threads"].get<int>(),
                    ref["flash_attn"].get<std::string>());
  os << "each row against the run with its own threads and flash attention at the reference "
        "ubatch\n";
  os << fmt::format("{:>7} {:>7} {:>5} {:>10} {:>12} {:>12} {:>9}\n", "ubatch", "threads", "fa",
                    "bitwise", "mean KL", "max KL", "top-1 Δ");
  for (const auto& row : r["rows"]) {
    const bool same = row["identical"].get<bool>();
    os << fmt::format("{:>7} {:>7} {:>5} {:>10} {:>12.4g} {:>12.4g} {:>8.3f}%\n",
                      row["n_ubatch"].get<int>(), row["n_threads"].get<int>(),
                      row["flash_attn"].get<std::string>(),
                      same ? "identical"
                           : fmt::format("{}/{}", row["positions_differing"].get<int>(),
                                         row["positions"].get<int>()),
                      row["kl_mean"].get<double>(), row["kl_max"].get<double>(),
                      100 * row["top1_change_rate"].get<double>());
  }
  os << "\n";
  for (const auto& p : r["patterns"]) {
    os << fmt::format("threads {}, flash attention {}: {}{}\n", p["n_threads"].get<int>(),
                      p["flash_attn"].get<std::string>(), p["summary"].get<std::string>(),
                      p["same_as_reference"].get<bool>()
                          ? ""
                          : " (its run at the reference ubatch differs from the reference)");
  }
}

}  // namespace hd::report
