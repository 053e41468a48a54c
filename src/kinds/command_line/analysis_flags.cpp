#include "kinds/command_line/analysis_flags.h"

#include <algorithm>

#include "analysis/plugin.h"

namespace hd::cli {

std::vector<std::string> AnalysisFlags::analyses() const {
  std::vector<std::string> out = names;  // a name given twice is refused by run::validate
  auto add = [&out](const char* name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.emplace_back(name);
  };
  if (routing) {
    add("routing");
    add("routing_load");
  }
  if (routing_transplant) add("routing_transplant");
  if (lens) add("lens");
  return out;
}

void add_analysis_flags(CLI::App& cmd, AnalysisFlags& flags) {
  cmd.add_flag("--routing", flags.routing,
               "MoE models: where and how the arms route tokens to other experts, per layer and "
               "position, and each expert's load (--analysis routing,routing_load)");
  cmd.add_flag("--routing-transplant", flags.routing_transplant,
               "MoE models: run each arm again with the other's experts and mixing weights, at "
               "every MoE layer and at each alone: the KL routing causes "
               "(--analysis routing_transplant)");
  cmd.add_flag("--lens", flags.lens,
               "logit lens in each arm's numerics: each layer's residual through the model's "
               "final norm and head (2 × n_layer more passes per chunk; --analysis lens)");
  std::string help = "add plug-in analyses (repeat, or a comma list); this build has:";
  for (const auto& a : analysis::chunk_analyses())
    help += "\n  " + a->name() + ": " + a->description();
  // Names are checked by run::validate, with the list of those that exist.
  cmd.add_option("--analysis", flags.names, help)->delimiter(',')->type_name("NAME");
}

}  // namespace hd::cli
