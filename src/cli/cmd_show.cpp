// heterodyne show run.hdy [--json] [--worst N] [--flips]
#include <iostream>
#include <optional>
#include <sstream>

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

void warn_modified(const std::string& file) {
  progress_line("warning: '" + file + "' fails its integrity check (changed after it was sealed)");
}

void show_several(const std::vector<std::string>& files, bool single_file_option) {
  if (single_file_option) {
    throw InputError("--json, --worst, --transplants, --components and --position take one file");
  }
  std::vector<report::Loaded> runs;
  for (const std::string& f : files) runs.push_back(report::load_experiment(f));
  std::ostringstream out;
  report::print_ladder(out, runs);
  for (const auto& l : runs) {
    if (l.integrity == "MISMATCH") warn_modified(l.path);
  }
  std::cout << out.str();
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
    // Everything is written to a buffer and printed at the end: an error half way (a position
    // that holds no transplants) leaves stdout empty, not a summary followed by a failure.
    std::ostringstream out;
    std::optional<report::Position> position;
    if (!o->position.empty()) position = report::parse_position(o->position);
    if (const std::string kind = report::experiment_kind(file); kind != "diff") {
      if (o->worst || o->transplants || o->components || o->flips || !o->position.empty()) {
        throw InputError("'" + file + "' is a " + kind + ": --worst, --transplants, --components, "
                         "--flips and --position are for diffs");
      }
      const report::LoadedResult r = report::load_result(file, kind);
      if (o->json) {
        out << report::result_json(r).dump(2, ' ', false,
                                           nlohmann::json::error_handler_t::replace)
            << "\n";
      } else if (kind == "sweep") {
        report::print_sweep(out, r);
      } else {
        report::print_floor(out, r);
      }
      if (r.integrity == "MISMATCH") warn_modified(file);
      std::cout << out.str();
      ctx.exit_code = 0;
      return;
    }
    const report::Loaded l = report::load_experiment(file);
    // Flat perplexity hides changed greedy answers: a version-vs-version run leads with them.
    const bool flips = (o->flips || report::compares_builds(l)) && l.summary.n_chunks > 0;
    if (o->json) {
      nlohmann::json j = report::summary_json(l, o->worst);
      if (flips) j["flips"] = report::flips_json(l);
      out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      if ((o->transplants || o->components || !o->position.empty()) && !l.transplants) {
        throw InputError("'" + file +
                         "' has no transplants: run diff with --transplants or --components");
      }
      if (flips) report::print_flips(out, l);
      report::print_summary(out, l);
      if (o->transplants) report::print_transplants(out, *l.transplants);
      if (o->components) report::print_components(out, *l.transplants);
      if (position) report::print_position(out, l, *position);
      if (o->worst > 0) report::print_worst(out, l, o->worst);
    }
    // Only once nothing can fail: an error is then the one line on stderr.
    if (l.integrity == "MISMATCH") warn_modified(file);
    std::cout << out.str();
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
