// heterodyne capture --model m.gguf [-ctk … -fa … -ub … -t N]
//                    --text-file golden.txt | --tokens IDS
//                    [--decode N] -o ref/
#include "kinds/command_line/arm_flags.h"
#include "cli/commands.h"
#include "errors.h"
#include "run/capture.h"

namespace hd::cli {

void add_capture(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string model, out;
    ArmFlags flags;
    InputFlags input;
    run::CaptureConfig cfg;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "capture", "store every tap of one arm on a golden text: a reference for a CI gate");
  in_group(*cmd, "Inputs", [&] {
    cmd->add_option("--model,-m", o->model, "the GGUF")->required();
    add_input_flags(*cmd, o->input, "the golden text ('-': standard input)");
    cmd->add_option("--max-tokens", o->cfg.max_tokens, "cut the input to this many tokens")
        ->capture_default_str();
    cmd->add_option("--decode", o->cfg.decode_steps,
                    "then this many single-token steps (greedy), taps named <tap>@token_<i>")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    add_skip_unencodable(*cmd, o->cfg.skip_unencodable);
  });
  in_group(*cmd, "Arms", [&] { add_single_arm_flags(*cmd, o->flags); });
  in_group(*cmd, "Output", [&] {
    cmd->add_option("-o,--output", o->out, "reference directory to write")->required();
    cmd->add_flag("--force", o->force, "replace an existing reference");
  });
  cmd->callback([o, &ctx] {
    const run::InputPath input = o->input.required("capture");
    o->cfg.text_file = input.path;
    o->cfg.token_ids = input.token_ids;
    o->cfg.arm = resolve_arm(o->model, o->flags, ArmFlags{});
    const auto manifest =
        run::capture_reference(o->cfg, o->out, o->force, ctx.command_line, progress_line);
    progress_line("wrote " + o->out + "/activations.safetensors (" +
                  std::to_string(manifest["taps"].size()) + " taps x " +
                  std::to_string(manifest["tokens"].size()) + " tokens, " +
                  std::to_string(o->cfg.decode_steps) + " decode steps) and manifest.json");
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
