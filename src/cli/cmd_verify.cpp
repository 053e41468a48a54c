// heterodyne verify run.hdy [--integrity-only] [--force] [-f TEXT|- | --tokens IDS|-]
#include "cli/commands.h"
#include "kinds/registry.h"

namespace hd::cli {

void add_verify(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string file;
    run::VerifyOptions options;
    InputFlags input;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("verify", "re-run a stored experiment and compare every number bitwise");
  cmd->add_option("file", o->file, "experiment file")->required();
  cmd->add_flag("--integrity-only", o->options.integrity_only, "only recompute the integrity hash");
  cmd->add_flag("--force", o->options.force,
                "compare even when a model hash or the llama.cpp commit differs");
  add_input_flags(*cmd, o->input,
                  "the text again, for a run that read standard input or whose text moved "
                  "(checked against the stored sha256; '-': standard input)",
                  "; for a run of --tokens, its ids again");
  cmd->callback([o, &ctx] {
    o->options.input = o->input.given("verify");
    ctx.exit_code = kinds::verify(o->file, o->options, progress_line);
  });
}

}  // namespace hd::cli
