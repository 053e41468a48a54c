// The echo kind's registration: its command (diff's flags for one arm), its summary as show
// prints it, and its verify. With echo.h/.cpp (the run) and echo_rows (its table), and
// web/src/kind_echo.ts (its page), this is everything the kind is.
#include <fmt/format.h>

#include <cmath>

#include "errors.h"
#include "kinds/command_line/arm_flags.h"
#include "kinds/echo/echo.h"
#include "kinds/summary_kind.h"

namespace hd::kinds {

namespace {

void print_echo(std::ostream& out, const report::LoadedResult& l) {
  const nlohmann::json& r = l.result;
  const auto number = [&](const char* key) {
    return r.contains(key) && r[key].is_number() ? fmt::format("{:.6g}", r[key].get<double>())
                                                 : std::string("n/a (no finite NLL)");
  };
  out << fmt::format("echo of {}\n", r.value("model", ""));
  out << fmt::format("  {} positions in {} chunks\n", r.value("n_positions", 0),
                     r.value("n_chunks", 0));
  out << "  mean NLL " << number("nll_mean") << "   PPL " << number("ppl") << "\n";
  if (r.value("n_nll_infinite", 0) > 0)
    out << fmt::format("  NLL is +inf (the next token masked) at {} positions, left out of "
                       "the mean\n",
                       r.value("n_nll_infinite", 0));
}

void add_echo_command(const RunKind& kind, CLI::App& app, cli::Context& ctx) {
  struct Opts {
    EchoConfig cfg;
    std::string model, out, resume;
    cli::ArmFlags flags;
    cli::InputFlags input;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(std::string(kind.name()), std::string(kind.description()));
  cli::in_group(*cmd, "Inputs", [&] {
    cmd->add_option("--a,-m", o->model, "the GGUF");
    cli::add_input_flags(*cmd, o->input, "the text ('-': standard input)",
                         cli::kChunkedTokensNote);
    cmd->add_option("--chunk,-c", o->cfg.chunk, "tokens per chunk")->capture_default_str();
    cmd->add_option("--max-chunks", o->cfg.max_chunks, "at most this many chunks (0: all)")
        ->capture_default_str();
    cli::add_skip_unencodable(*cmd, o->cfg.skip_unencodable);
  });
  cli::in_group(*cmd, "Arm", [&] { cli::add_single_arm_flags(*cmd, o->flags); });
  cli::add_output_and_resume(*cmd, o->out, o->force, o->resume);
  cmd->callback([o, cmd, &ctx] {
    const run::InputPath input = o->input.given(std::string(kEchoKind));
    cli::ResumableRun r = cli::ResumableRun::of_arms(o->resume, o->out, o->model, input);
    r.resume_run = [&] { return echo_resume(o->resume, ctx.command_line, cli::progress_line, input); };
    r.new_run = [&] {
      EchoConfig cfg = o->cfg;
      cfg.a = cli::resolve_arm(cli::stored_path(o->model), o->flags, cli::ArmFlags{});
      cfg.text_file = cli::stored_path(input.path);
      cfg.token_ids = input.token_ids;
      return echo_run(cfg, o->out, o->force, ctx.command_line, cli::progress_line);
    };
    ctx.exit_code = cli::run_or_resume(*cmd, r);
  });
}

}  // namespace

std::unique_ptr<const RunKind> make_echo_kind() {
  return summary_kind(
      {kEchoKind,
       "arm A's NLL of every next token (the worked example of a kind: docs/extending.md)",
       add_echo_command,
       echo_verify,
       print_echo, nullptr, nullptr, /*hidden=*/true});
}

}  // namespace hd::kinds
