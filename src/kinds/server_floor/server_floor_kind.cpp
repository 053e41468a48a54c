// The server-floor kind's registration: its command (one arm, the server settings as every arm
// spells them, --trials), its summary as show prints it, and its verify. With server_floor.h/.cpp
// (the run), server_floor_rows (its table) and web/src/kind_server_floor.ts (its page), this is
// everything the kind is.
#include <fmt/format.h>

#include "common/json_number.h"
#include "errors.h"
#include "kinds/command_line/arm_flags.h"
#include "kinds/server_floor/server_floor.h"
#include "kinds/summary_kind.h"

namespace hd::kinds {

namespace {

std::string kl_text(const nlohmann::json& v) {
  if (v.is_number()) return fmt::format("{:.4g}", v.get<double>());
  return v.is_string() ? v.get<std::string>() : "n/a";
}

void print_server_floor(std::ostream& out, const report::LoadedResult& l) {
  const nlohmann::json& r = l.result;
  const std::string server = r.value("server", "");
  out << fmt::format("server floor of {}\n", r.value("model", ""));
  out << fmt::format("  {} against -np 1 without the prompt cache (the plain arm), {} "
                     "compositions of what else the server is doing\n",
                     server.empty() ? "the plain arm itself" : server, r.value("trials", 0));
  out << fmt::format("  {} positions in {} chunks\n", r.value("n_positions", 0), r.value("n_chunks", 0));
  const auto rate = [&](const char* key) {
    return r.contains(key) ? r[key].value("text", std::string("—")) : std::string("—");
  };
  out << "  greedy token depends on what else the server is doing (the compositions' top-1 "
         "disagree): "
      << rate("varying") << "\n";
  out << "  greedy token differs from -np 1 alone in at least one composition: "
      << rate("dependent") << "\n";
  out << fmt::format("  KL(-np 1 || server) per position: mean over compositions {}, largest {}\n",
                     kl_text(r.value("kl_mean", nlohmann::json())),
                     kl_text(r.value("kl_max", nlohmann::json())));
}

void add_server_floor_command(const RunKind& kind, CLI::App& app, cli::Context& ctx) {
  struct Opts {
    ServerFloorConfig cfg;
    std::string model, out, resume;
    cli::ArmFlags flags;
    cli::InputFlags input;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(std::string(kind.name()), std::string(kind.description()));
  cli::in_group(*cmd, "Inputs", [&] {
    cmd->add_option("-m,--model", o->model, "the GGUF");
    cli::add_input_flags(*cmd, o->input, "the text ('-': standard input)", cli::kChunkedTokensNote);
    cmd->add_option("--chunk,-c", o->cfg.chunk, "tokens per chunk")->capture_default_str();
    cmd->add_option("--max-chunks", o->cfg.max_chunks, "at most this many chunks (0: all)")
        ->capture_default_str();
    cli::add_skip_unencodable(*cmd, o->cfg.skip_unencodable);
    cmd->add_option("--trials", o->cfg.trials,
                    "server compositions: trial t takes neighbour seed S + t and slot (K + t) mod slots")
        ->capture_default_str();
  });
  cli::in_group(*cmd, "Arm", [&] { cli::add_single_arm_flags(*cmd, o->flags); });
  cli::add_output_and_resume(*cmd, o->out, o->force, o->resume);
  cmd->callback([o, cmd, &ctx] {
    const run::InputPath input = o->input.given(std::string(kServerFloorKind));
    cli::ResumableRun r = cli::ResumableRun::of_arms(o->resume, o->out, o->model, input);
    r.resume_run = [&] {
      return server_floor_resume(o->resume, ctx.command_line, cli::progress_line, input);
    };
    r.new_run = [&] {
      ServerFloorConfig cfg = o->cfg;
      cfg.arm = cli::resolve_arm(cli::stored_path(o->model), o->flags, cli::ArmFlags{});
      cfg.text_file = cli::stored_path(input.path);
      cfg.token_ids = input.token_ids;
      return server_floor_run(cfg, o->out, o->force, ctx.command_line, cli::progress_line);
    };
    ctx.exit_code = cli::run_or_resume(*cmd, r);
  });
}

}  // namespace

std::unique_ptr<const RunKind> make_server_floor_kind() {
  return summary_kind({kServerFloorKind,
                       "the deployment floor: how much what else llama-server is doing moves a "
                       "model's logits and greedy tokens (docs/server.md)",
                       add_server_floor_command, server_floor_verify, print_server_floor, nullptr,
                       nullptr});
}

}  // namespace hd::kinds
