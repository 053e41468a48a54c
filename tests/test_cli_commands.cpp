// The top level's list of commands comes from the commands themselves: a mistyped command is
// answered with every command `heterodyne --help` lists, in the same order, none missing.
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace {

// The names under "Subcommands:" in `heterodyne --help` (CLI11's layout: two spaces, the name,
// then its description).
std::vector<std::string> help_commands() {
  const auto r = hd::test::run_cli({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::vector<std::string> names;
  bool in_list = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "Subcommands:") {
      in_list = true;
    } else if (in_list && line.rfind("   ", 0) == 0) {
      continue;  // a description's wrapped continuation
    } else if (in_list && line.rfind("  ", 0) == 0) {
      std::istringstream words(line);
      std::string name;
      words >> name;
      names.push_back(name);
    } else if (in_list && !line.empty()) {
      break;
    }
  }
  return names;
}

// The list in a refusal's "(commands: a, b, c; see heterodyne --help)"; empty when absent.
std::vector<std::string> commands_named_in(const std::string& err) {
  const std::string head = "(commands: ", tail = "; see heterodyne --help)";
  const size_t from = err.find(head), to = err.find(tail);
  if (from == std::string::npos || to == std::string::npos || to < from) return {};
  const std::string list = err.substr(from + head.size(), to - from - head.size());
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t next = list.find(", ", at);
    out.push_back(list.substr(at, next - at));
    if (next == std::string::npos) return out;
    at = next + 2;
  }
}

}  // namespace

// The help is CLI11's own list; the refusal must match it exactly, so a command added to the
// app and missing from the message (or one named that does not exist) fails here.
TEST(CliCommands, UnknownCommandNamesEverySubcommand) {
  const std::vector<std::string> listed = help_commands();
  ASSERT_GE(listed.size(), 2u) << "no subcommands found in heterodyne --help";
  for (const std::string typed : {"frobnicate", "--frobnicate"}) {
    const auto r = hd::test::run_cli({typed});
    const std::string what = typed[0] == '-' ? "unknown option '" : "unknown command '";
    hd::test::expect_refusal(r, 2, what + typed + "'", "heterodyne " + typed);
    EXPECT_EQ(commands_named_in(r.err), listed) << r.err;
  }
}
