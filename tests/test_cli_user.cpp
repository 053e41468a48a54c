// The command line as a user meets it (issue 46): llama.cpp's -m on a command of two arms, verify's
// verdict where a script reads it, and every model preset listed with the size of its file.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/model_maker.h"
#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::CliResult;
using hd::test::run_cli;
using hd::test::shared_path;

namespace {

std::string dir() {
  static const std::string d = hd::test::temp_dir("cli-user");
  return d;
}

// A one-chunk diff of stories260K against its own quantization into dir()/NAME.hdy, with the
// arm flags `b_flags`; "" where it failed (the test then says why).
std::string small_run(const std::string& name, const std::vector<std::string>& b_flags) {
  const std::string e = dir() + "/" + name + ".hdy";
  std::vector<std::string> args = {"diff", "--a", shared_path("models/stories260K.gguf")};
  args.insert(args.end(), b_flags.begin(), b_flags.end());
  args.insert(args.end(), {"-f", shared_path("corpora/tom-sawyer.txt"), "--max-chunks", "1",
                           "--chunk", "64", "--no-floor", "-o", e, "--force"});
  const CliResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? e : "";
}

int lines_in(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

TEST(CliUser, LlamaCppsModelFlagOnACommandOfTwoArmsSaysToUseA) {
  for (const char* command : {"diff", "sweep", "generate", "length-curve"}) {
    for (const char* flag : {"-m", "--model", "--model=x.gguf"}) {
      std::vector<std::string> args = {command, flag};
      if (std::string(flag).find('=') == std::string::npos) args.push_back("x.gguf");
      const CliResult r = run_cli(args);
      SCOPED_TRACE(std::string(command) + " " + flag);
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_EQ(lines_in(r.err), 1) << r.err;
      EXPECT_NE(r.err.find(std::string(command) + " runs two arms"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("with --a"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("--b"), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("not expected"), std::string::npos) << r.err;  // CLI11's wording
    }
  }
}

TEST(CliUser, ACommandOfOneModelTakesMAsLlamaCppDoes) {
  HD_REQUIRE_SHARED();
  const CliResult r = run_cli({"points", "-m", shared_path("models/stories260K.gguf")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("l_out"), std::string::npos) << r.out;
}

TEST(CliUser, VerifyPrintsItsVerdictOnStdoutAndItsProgressOnStderr) {
  HD_REQUIRE_SHARED();
  const std::string model = shared_path("models/stories260K.gguf");
  const std::string e = dir() + "/verify.hdy";
  const CliResult made = run_cli({"diff", "--a", model, "--b", model, "-f",
                                  shared_path("corpora/tom-sawyer.txt"), "--max-chunks", "2",
                                  "--chunk", "64", "-o", e, "--force"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const CliResult v = run_cli({"verify", e});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  // Two lines on stdout, the verdicts, in order; none of them on stderr, where the chunks go.
  std::istringstream out(v.out);
  std::string integrity, chunks;
  std::getline(out, integrity);
  std::getline(out, chunks);
  EXPECT_EQ(integrity.rfind("integrity: ok (sha256 ", 0), 0u) << v.out;
  EXPECT_EQ(chunks, "verify: all 2 chunks reproduce bitwise") << v.out;
  EXPECT_EQ(lines_in(v.out), 2) << v.out;
  EXPECT_EQ(v.err.find("integrity: ok"), std::string::npos) << v.err;
  EXPECT_EQ(v.err.find("reproduce bitwise"), std::string::npos) << v.err;
  EXPECT_NE(v.err.find("chunk 2/2"), std::string::npos) << v.err;
  // --integrity-only: its one verdict alone.
  const CliResult i = run_cli({"verify", e, "--integrity-only"});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_EQ(i.out.rfind("integrity: ok (sha256 ", 0), 0u) << i.out;
  EXPECT_EQ(i.err, "");
}

TEST(CliUser, MakeModelListsEveryPresetWithTheSizeOfTheFileItWrites) {
  const CliResult help = run_cli({"make-model", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  const CliResult list = run_cli({"make-model", "--list-presets"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (const std::string& name : hd::engine::model_presets()) {
    EXPECT_NE(help.out.find(name), std::string::npos) << name << "\n" << help.out;
    EXPECT_NE(("\n" + list.out).find("\n" + name + " "), std::string::npos) << name << "\n"
                                                                              << list.out;
  }
  // The size said is the size written, to the byte.
  const std::string made = dir() + "/tiny-llama-f16.gguf";
  const CliResult m = run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o", made,
                               "--force"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  hd::engine::ModelSpec spec;
  spec.preset = "tiny-llama";
  spec.type = "f16";
  EXPECT_EQ(hd::engine::model_file_bytes(spec), fs::file_size(made));
  // And tiny-llama's line gives it, at f16, in MB.
  const size_t line = list.out.find("tiny-llama ");
  ASSERT_NE(line, std::string::npos);
  const std::string row = list.out.substr(line, list.out.find('\n', line) - line);
  char size[32];
  std::snprintf(size, sizeof size, "%.1f MB", static_cast<double>(fs::file_size(made)) / 1e6);
  const size_t f16 = row.find(" f16 ");
  ASSERT_NE(f16, std::string::npos) << row;
  const size_t at = row.find_first_not_of(' ', f16 + 5);
  EXPECT_EQ(row.compare(at, std::string(size).size(), size), 0) << row << "\n" << size;
}

TEST(CliUser, ShowOfSeveralRunsGivesEachBsFileSizeAndBitsPerWeight) {
  HD_REQUIRE_SHARED();
  std::vector<std::string> runs;
  for (const char* type : {"Q8_0", "Q4_0"}) {
    runs.push_back(small_run(std::string("ladder-") + type, {"--b-quant", type}));
    ASSERT_FALSE(runs.back().empty());
  }
  const CliResult shown = run_cli({"show", runs[0], runs[1]});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("B's file"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("bits/w"), std::string::npos) << shown.out;
  for (const std::string& e : runs) {
    const CliResult j = run_cli({"show", e, "--json"});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    const auto b = nlohmann::json::parse(j.out)["provenance"]["arms"]["b"];
    const double bytes = static_cast<double>(fs::file_size(b["model"].get<std::string>()));
    char size[64], bits[64];
    std::snprintf(size, sizeof size, "%.2f MB", bytes / 1e6);
    std::snprintf(bits, sizeof bits, "%.2f", 8 * bytes / b["n_params"].get<double>());
    const std::string type = e.substr(e.find("ladder-") + 7, 4);
    const size_t row = shown.out.find("\n" + type);
    ASSERT_NE(row, std::string::npos) << shown.out;
    const std::string line = shown.out.substr(row + 1, shown.out.find('\n', row + 1) - row - 1);
    EXPECT_NE(line.find(std::string(size) + " "), std::string::npos) << line << " / " << size;
    EXPECT_NE(line.find(std::string(" ") + bits + " "), std::string::npos) << line << " / " << bits;
    // One run alone: B is titled by what was given (A's file → the type), its cache a detail.
    const CliResult one = run_cli({"show", e});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_NE(one.out.find("\n  B  stories260K.gguf → " + type + "  [-ctk"), std::string::npos)
        << one.out;
    EXPECT_NE(one.out.find("cached at " + b["model"].get<std::string>() + ")"), std::string::npos)
        << one.out;
  }
}

// Every command's --help and --help-all within 100 columns; --help short enough to read, with
// llama.cpp's spellings as its users type them, the rare flags under --help-all.
TEST(CliUser, HelpFitsOneHundredColumnsListsLlamaCppsSpellingsAndLeavesTheRareFlagsToHelpAll) {
  const CliResult top = run_cli({"--help"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  std::vector<std::string> commands = {""};
  bool in_list = false;
  std::istringstream lines_in_help(top.out);
  for (std::string line; std::getline(lines_in_help, line);) {
    if (line == "Subcommands:") in_list = true;
    else if (in_list && line.size() > 2 && line.rfind("  ", 0) == 0 && line[2] != ' ')
      commands.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  ASSERT_GE(commands.size(), 20u) << top.out;
  const auto code_points = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  for (const std::string& c : commands) {
    for (const char* flag : {"--help", "--help-all"}) {
      std::vector<std::string> args;
      if (!c.empty()) args.push_back(c);
      args.push_back(flag);
      const CliResult r = run_cli(args);
      ASSERT_EQ(r.exit_code, 0) << c << " " << flag << "\n" << r.err;
      std::istringstream in(r.out);
      for (std::string line; std::getline(in, line);)
        EXPECT_LE(code_points(line), 100u) << c << " " << flag << ": " << line;
    }
  }
  const CliResult diff = run_cli({"diff", "--help"}), all = run_cli({"diff", "--help-all"});
  int lines = 0;
  for (char ch : diff.out) lines += ch == '\n';
  EXPECT_LE(lines, 80) << diff.out;  // 121 before: every arm flag three times
  for (const char* spelled : {"-ctk,--cache-type-k", "-ctv,--cache-type-v", "-fa,--flash-attn",
                              "-ub,--ubatch-size", "-ngl,--n-gpu-layers", "-dev,--device"}) {
    EXPECT_NE(diff.out.find("\n  " + std::string(spelled) + " "), std::string::npos) << spelled;
  }
  EXPECT_EQ(diff.out.find("--ctk"), std::string::npos) << diff.out;
  EXPECT_EQ(diff.out.find("--a-ctk"), std::string::npos) << diff.out;
  EXPECT_EQ(diff.out.find("--neighbours"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("diff --help-all lists these too: "), std::string::npos) << diff.out;
  // Memory is no rare choice on a large model: one context at a time, or both (docs/diff.md).
  EXPECT_NE(diff.out.find("--two-contexts"), std::string::npos) << diff.out;
  for (const char* rare : {"--a-ctk", "--b-fa", "--neighbours", "--prompt-cache", "--shard"})
    EXPECT_NE(all.out.find(rare), std::string::npos) << rare << "\n" << all.out;
  // The flags --help shows as llama.cpp spells them work so spelled.
  const CliResult typed = run_cli({"diff", "-ctk", "q8_0", "-fa", "on", "-ub", "64"});
  EXPECT_EQ(typed.exit_code, 2);
  EXPECT_NE(typed.err.find("diff needs --a"), std::string::npos) << typed.err;
}

// A ladder of settings on one B: each run named by what differs between the runs shown (here
// flash attention), not by B's type, which all share.
TEST(CliUser, ShowNamesEachRunByWhatDiffersBetweenTheRuns) {
  HD_REQUIRE_SHARED();
  std::vector<std::string> runs;
  for (const char* fa : {"off", "on"}) {
    runs.push_back(small_run(std::string("fa-") + fa, {"--b-quant", "Q8_0", "--b-fa", fa}));
    ASSERT_FALSE(runs.back().empty());
  }
  const CliResult shown = run_cli({"show", runs[0], runs[1]});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("\nfa off "), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("\nfa on "), std::string::npos) << shown.out;
  EXPECT_EQ(shown.out.find("\nQ8_0 "), std::string::npos) << shown.out;  // shared: not a name
  // Nothing differs: each run is its file's name.
  const CliResult same = run_cli({"show", runs[0], runs[0]});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("\nfa-off "), std::string::npos) << same.out;
}
