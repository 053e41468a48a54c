// Headings for --help, and the flags several commands share.
#include "kinds/command_line/arm_flags.h"
#include "kinds/command_line/command_line.h"
#include "kinds/command_line/help_format.h"
#include "errors.h"

namespace hd::cli {

void in_group(CLI::App& cmd, const std::string& heading, const std::function<void()>& add) {
  const size_t before = cmd.get_options().size();
  add();
  const auto options = cmd.get_options();
  for (size_t i = before; i < options.size(); ++i) options[i]->group(heading);
}

// The flags most runs set come first; an arm's own flags and llama-server's (docs/server.md)
// are under --help-all (help_format.h), so that --help fits a screen.
void add_two_arm_flags(CLI::App& cmd, ArmFlags& shared, ArmFlags& own_a, ArmFlags& own_b) {
  const std::string both = "Arms: both (llama.cpp's spellings)";
  const std::string server = "Arms as llama-server runs them: both", a = "Arm A only",
                    b = "Arm B only";
  for (const std::string& g : {server, a, b}) mark_rare_group(g);
  in_group(cmd, both, [&] { add_arm_flags(cmd, shared, ""); });
  for (CLI::Option* o : cmd.get_options()) {
    if (o->get_group() == both && is_server_flag(*o)) o->group(server);
  }
  in_group(cmd, a, [&] { add_arm_flags(cmd, own_a, "a-"); });
  in_group(cmd, b, [&] { add_arm_flags(cmd, own_b, "b-"); });
}

run::InputPath InputFlags::given(const std::string& command) const {
  if (!text.empty() && !tokens.empty())
    throw InputError(command + " takes one of --text-file FILE or --tokens FILE, not both");
  return tokens.empty() ? run::InputPath{text, false} : run::InputPath{tokens, true};
}

run::InputPath InputFlags::required(const std::string& command) const {
  run::InputPath in = given(command);
  if (in.empty()) throw InputError(command + " needs " + ResumableRun::kInputNeeded);
  return in;
}

void add_input_flags(CLI::App& cmd, InputFlags& f, const std::string& text_help,
                     const std::string& tokens_note) {
  cmd.add_option("--text-file,-f", f.text, text_help);
  // Token ids stand where the text's tokens would (run/input.h): no BOS added, none tokenized.
  cmd.add_option("--tokens", f.tokens,
                 "token ids instead of a text: spaced integers or a JSON array ('-': standard "
                 "input), used as given" +
                     tokens_note);
}

const char* const kChunkedTokensNote = "; chunk starts become BOS as a text's (docs/diff.md)";

CLI::Option* add_skip_unencodable(CLI::App& cmd, bool& skip) {
  return cmd.add_flag("--skip-unencodable", skip,
                      "drop (and count) the lines the vocabulary cannot encode instead of "
                      "refusing the text; recorded, so resume and verify drop the same");
}

// A resumed run uses its stored settings: a flag that would change them is a mistake, named
// in one line (CLI11's excludes() would print "Excludes: --resume" under every option).
void refuse_flags_besides_resume(const CLI::App& cmd) {
  for (const CLI::Option* opt : cmd.get_options()) {
    const std::string name = opt->get_name();
    if (opt->count() == 0 || name == "--resume" || name == "--text-file" || name == "--tokens" ||
        name == "--prompts")
      continue;
    const bool prompts = cmd.get_option_no_throw("--prompts") != nullptr;
    throw InputError("--resume finishes a run with its stored settings: it takes no other flag "
                     "but " + std::string(prompts ? "--prompts" : "-f or --tokens") + ", not " + name);
  }
}

void add_output_and_resume(CLI::App& cmd, std::string& out, bool& force, std::string& resume) {
  in_group(cmd, "Output", [&] {
    cmd.add_option("-o,--output", out, "experiment file to write");
    cmd.add_flag("--force", force, "replace an existing output file");
  });
  const bool prompts = cmd.get_option_no_throw("--prompts") != nullptr;
  in_group(cmd, "Resume", [&] {
    cmd.add_option("--resume", resume,
                   "finish an interrupted " + cmd.get_name() +
                       " file with its stored settings: no other flag but " +
                       (prompts ? "--prompts" : "-f or --tokens") +
                       " (the input again, for a run that read standard input)");
  });
}

}  // namespace hd::cli
