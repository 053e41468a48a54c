// heterodyne demo-model -o demo-f32.gguf [--steps N] [--seed S] [--held-out-text F] [--prompt P]
#include <filesystem>

#include "cli/commands.h"
#include "common/output_path.h"
#include "demo/demo_model.h"
#include "errors.h"
#include "report/show.h"

namespace hd::cli {

void add_demo_model(CLI::App& app, Context& ctx) {
  struct Opts {
    demo::DemoSettings settings;
    std::string out, held_out;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "demo-model",
      "train (or reuse) the small llama of the demo on source code every install has");
  cmd->add_option("-o,--output", o->out, "where to copy the F32 GGUF")->required();
  cmd->add_option("--steps", o->settings.steps, "optimizer steps")->capture_default_str();
  cmd->add_option("--ctx", o->settings.n_ctx, "training window, a multiple of 256")
      ->capture_default_str();
  cmd->add_option("--vocab", o->settings.vocab_size, "vocabulary size")->capture_default_str();
  cmd->add_option("--lr", o->settings.lr, "AdamW peak learning rate")->capture_default_str();
  cmd->add_option("--seed", o->settings.seed, "initial weights and training windows")
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->settings.n_threads, "threads (default: physical cores)");
  cmd->add_option("--corpus", o->settings.corpus_roots,
                  "directories to train on (default: the llama.cpp tree and the Python stdlib)");
  cmd->add_option("--held-out-text", o->held_out, "also copy the held-out text here");
  cmd->add_option("--prompt", o->settings.prompt, "greedy continuation shown at the end")
      ->capture_default_str();
  cmd->callback([o, &ctx] {
    if (o->settings.n_threads < 0) throw InputError("thread count must be at least 1");
    check_output_path(o->out);
    if (!o->held_out.empty()) check_output_path(o->held_out);
    const demo::DemoModel d = demo::ensure_demo_model(o->settings, progress_line);
    namespace fs = std::filesystem;
    const auto copy = [](const std::string& from, const std::string& to) {
      std::error_code ec;
      fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
      if (ec) throw RuntimeError("cannot copy " + from + " to " + to + ": " + ec.message());
    };
    copy(d.model_path, o->out);
    if (!o->held_out.empty()) copy(d.held_out_path, o->held_out);
    progress_line("demo: held-out loss " + std::to_string(d.before.nats_per_byte) + " -> " +
                  std::to_string(d.after.nats_per_byte) + " nats/byte; greedy after \"" +
                  report::printable(d.prompt) + "\": \"" + report::printable(d.continuation) +
                  "\"");
    progress_line("wrote " + o->out);
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
