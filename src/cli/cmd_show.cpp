// heterodyne show run.hdy [--json] [--worst N]
#include <iostream>

#include "cli/commands.h"
#include "errors.h"
#include "report/show.h"
#include "report/transplants.h"

namespace hd::cli {

void add_show(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string file;
    bool json = false;
    int worst = 0;
    bool transplants = false, components = false;
    std::string position;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("show", "print what an experiment file holds");
  cmd->add_option("file", o->file, "experiment file")->required();
  cmd->add_flag("--json", o->json, "machine-readable output");
  cmd->add_flag("--transplants", o->transplants,
                "denoise and noise curves over layers, with intervals");
  cmd->add_flag("--components", o->components, "attention vs MLP per layer, with intervals");
  cmd->add_option("--position", o->position,
                  "one token (CHUNK:POS): its KL after each restore point");
  cmd->add_option("--worst", o->worst, "also list the N positions with the largest KL")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o, &ctx] {
    const report::Loaded l = report::load_experiment(o->file);
    if (l.integrity == "MISMATCH") {
      progress_line("warning: '" + o->file +
                    "' fails its integrity check (changed after it was sealed)");
    }
    if (o->json) {
      std::cout << report::summary_json(l, o->worst)
                       .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    } else {
      if ((o->transplants || o->components || !o->position.empty()) && !l.transplants) {
        throw InputError("'" + o->file +
                         "' has no transplants: run diff with --transplants or --components");
      }
      report::print_summary(std::cout, l);
      if (o->transplants) report::print_transplants(std::cout, *l.transplants);
      if (o->components) report::print_components(std::cout, *l.transplants);
      if (!o->position.empty()) report::print_position(std::cout, l, o->position);
      if (o->worst > 0) report::print_worst(std::cout, l, o->worst);
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
