// heterodyne show run.hdy [--json] [--worst N] [--flips]
#include <iostream>

#include "cli/commands.h"
#include "errors.h"
#include "report/show.h"
#include "report/flips.h"
#include "report/floor.h"
#include "report/stored_result.h"
#include "report/sweep.h"
#include "report/transplants.h"

namespace hd::cli {
namespace {

void show_several(const std::vector<std::string>& files, bool single_file_option) {
  if (single_file_option) {
    throw InputError("--json, --worst, --transplants, --components and --position take one file");
  }
  std::vector<report::Loaded> runs;
  for (const std::string& f : files) runs.push_back(report::load_experiment(f));
  for (const auto& l : runs) {
    if (l.integrity == "MISMATCH") {
      progress_line("warning: '" + l.path +
                    "' fails its integrity check (changed after it was sealed)");
    }
  }
  report::print_ladder(std::cout, runs);
}

}  // namespace

void add_show(CLI::App& app, Context& ctx) {
  struct Opts {
    std::vector<std::string> files;
    bool json = false;
    int worst = 0;
    bool transplants = false, components = false, flips = false;
    std::string position;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("show", "print what an experiment file holds");
  cmd->add_option("files", o->files,
                  "experiment file; several: one row each, side by side (a quantization ladder)")
      ->required();
  cmd->add_flag("--json", o->json, "machine-readable output");
  cmd->add_flag("--transplants", o->transplants,
                "denoise and noise curves over layers, with intervals");
  cmd->add_flag("--components", o->components, "attention vs MLP per layer, with intervals");
  cmd->add_option("--position", o->position,
                  "one token (CHUNK:POS): its KL after each restore point");
  cmd->add_flag("--flips", o->flips,
                "lead with top-1 flips and where they form (the default when the arms ran "
                "different llama.cpp builds)");
  cmd->add_option("--worst", o->worst, "also list the N positions with the largest KL")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o, &ctx] {
    if (o->files.size() > 1) {
      show_several(o->files, o->json || o->worst || o->transplants || o->components ||
                                 o->flips || !o->position.empty());
      ctx.exit_code = 0;
      return;
    }
    const std::string& file = o->files.front();
    if (const std::string kind = report::experiment_kind(file); kind != "diff") {
      if (o->worst || o->transplants || o->components || o->flips || !o->position.empty()) {
        throw InputError("'" + file + "' is a " + kind + ": --worst, --transplants, --components, "
                         "--flips and --position are for diffs");
      }
      const report::LoadedResult r = report::load_result(file, kind);
      if (r.integrity == "MISMATCH") {
        progress_line("warning: '" + file +
                      "' fails its integrity check (changed after it was sealed)");
      }
      if (o->json) {
        std::cout << report::result_json(r).dump(2, ' ', false,
                                                 nlohmann::json::error_handler_t::replace)
                  << "\n";
      } else if (kind == "sweep") {
        report::print_sweep(std::cout, r);
      } else {
        report::print_floor(std::cout, r);
      }
      ctx.exit_code = 0;
      return;
    }
    const report::Loaded l = report::load_experiment(file);
    if (l.integrity == "MISMATCH") {
      progress_line("warning: '" + file +
                    "' fails its integrity check (changed after it was sealed)");
    }
    // Flat perplexity hides changed greedy answers: a version-vs-version run leads with them.
    const bool flips = (o->flips || report::compares_builds(l)) && l.summary.n_chunks > 0;
    if (o->json) {
      nlohmann::json j = report::summary_json(l, o->worst);
      if (flips) j["flips"] = report::flips_json(l);
      std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      if ((o->transplants || o->components || !o->position.empty()) && !l.transplants) {
        throw InputError("'" + file +
                         "' has no transplants: run diff with --transplants or --components");
      }
      if (flips) report::print_flips(std::cout, l);
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
