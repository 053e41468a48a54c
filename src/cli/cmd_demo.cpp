// heterodyne demo-model -o demo-f32.gguf [--steps N] [--seed S] [--held-out-text F] [--prompt P]
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "common/output_file.h"
#include "demo/demo_model.h"
#include "errors.h"
#include "report/show.h"

namespace hd::cli {

void add_demo_model(CLI::App& app, Context& ctx) {
  struct Opts {
    demo::DemoSettings settings;
    std::string out, held_out;
    bool force = false;
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
  cmd->add_flag("--force", o->force, "replace existing output files");
  cmd->add_option("--prompt", o->settings.prompt, "greedy continuation shown at the end")
      ->capture_default_str();
  cmd->callback([o, &ctx] {
    if (o->settings.n_threads < 0) throw InputError("thread count must be at least 1");
    if (!o->held_out.empty() && o->held_out == o->out)
      throw InputError("-o and --held-out-text name the same file '" + o->out + "'");
    const OutputPolicy model_policy{o->force, {o->held_out}};
    const OutputPolicy text_policy{o->force, {o->out}};
    check_output_path(o->out, model_policy);
    if (!o->held_out.empty()) check_output_path(o->held_out, text_policy);
    const demo::DemoModel d = demo::ensure_demo_model(o->settings, progress_line);
    // Copied out of the cache through a temporary: the cache's files are never the outputs.
    const auto copy = [](const std::string& from, const std::string& to,
                         const OutputPolicy& policy) {
      std::ifstream in(from, std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      if (!in) throw RuntimeError("cannot read " + from);
      OutputPolicy p = policy;
      p.inputs.push_back(from);
      write_output_file(to, bytes.view(), p);
    };
    copy(d.model_path, o->out, model_policy);
    if (!o->held_out.empty()) copy(d.held_out_path, o->held_out, text_policy);
    progress_line("demo: held-out loss " + std::to_string(d.before.nats_per_byte) + " -> " +
                  std::to_string(d.after.nats_per_byte) + " nats/byte; greedy after \"" +
                  report::printable(d.prompt) + "\": \"" + report::printable(d.continuation) +
                  "\"");
    progress_line("wrote " + o->out);
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
