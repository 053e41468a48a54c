// heterodyne show run.hdy [--json] [--worst N] [--flips]
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "errors.h"
#include "kinds/command_line/analysis_flags.h"
#include "kinds/views.h"
#include "report/show.h"
#include "store/experiment.h"

namespace hd::cli {
namespace {

void warn_modified(const std::string& file) { progress_line(store::integrity_warning(file)); }

void show_several(const std::vector<std::string>& files, bool single_file_option) {
  if (single_file_option) {
    throw InputError(
        "--json, --worst, --transplants, --components, --routing, --lens and --position take one file");
  }
  std::vector<report::Loaded> runs;
  for (const std::string& f : files) runs.push_back(kinds::load_positions(f));
  std::ostringstream out;
  report::print_ladder(out, runs);
  for (const auto& l : runs) {
    if (l.integrity == store::kIntegrityMismatch) warn_modified(l.path);
  }
  std::cout << out.str();
}

}  // namespace

void add_show(CLI::App& app, Context& ctx) {
  struct Opts {
    std::vector<std::string> files;
    kinds::ShowRequest r;  // all but the position, which is parsed once the flags are read
    std::string position;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("show", "print what an experiment file holds");
  cmd->add_option("files", o->files,
                  "experiment file; several: one row each, side by side (a quantization ladder)")
      ->required();
  cmd->add_flag("--json", o->r.json, "machine-readable output");
  cmd->add_flag("--transplants", o->r.transplants,
                "denoise and noise curves over layers, with intervals");
  cmd->add_flag("--components", o->r.components, "attention vs MLP per layer, with intervals");
  add_show_alone_flags(*cmd, o->r.alone);
  cmd->add_option("--position", o->position,
                  "one position (CHUNK:POS, P predicting token P + 1, as --worst and export count): its context, both top-5, and its KL after each restore point");
  cmd->add_flag("--flips", o->r.flips,
                "lead with top-1 flips and where they form (the default when the arms ran "
                "different llama.cpp builds)");
  cmd->add_option("--worst", o->r.worst, "also list the N positions with the largest KL")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o, &ctx] {
    if (o->files.size() > 1) {
      show_several(o->files, o->r.json || o->r.worst || o->r.transplants || o->r.components ||
                                 o->r.flips || !o->r.alone.empty() ||
                                 !o->position.empty());
      ctx.exit_code = 0;
      return;
    }
    if (!o->position.empty()) o->r.position = report::parse_position(o->position);
    const kinds::Shown shown = kinds::show_experiment(o->files.front(), o->r);
    // Only once nothing can fail: an error is then the one line on stderr.
    if (shown.modified) warn_modified(o->files.front());
    std::cout << shown.text;
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
