// The command line as a new user meets it (issue 16): grouped help that states the --resume
// rule once, `-f -` as standard input (and what resume and verify need then), export's tables,
// a llama.cpp build spec checked before anything is built, and --skip-unencodable.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "analysis/flips.h"
#include "engine/model.h"
#include "errors.h"
#include "store/experiment.h"
#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::CliResult;
using hd::test::expect_refused;
using hd::test::read_file;
using hd::test::run_cli;
using hd::test::run_cli_with_input;
using hd::test::shared_path;
using nlohmann::json;

namespace {

std::string dir() {
  static const std::string d = hd::test::temp_dir("cli-slips");
  return d;
}
std::string m260k() { return shared_path("models/stories260K.gguf"); }
std::string m656k() { return shared_path("models/TinyStories-656K.f16.gguf"); }
std::string tom() { return shared_path("corpora/tom-sawyer.txt"); }

json show_json(const std::string& path) {
  const CliResult r = run_cli({"show", path, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

}  // namespace

// =============================================================================================
// --help

TEST(CliSlips, HelpGroupsTheFlagsAndStatesTheResumeRuleOnce) {
  const CliResult diff = run_cli({"diff", "--help"});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_EQ(diff.out.find("Excludes"), std::string::npos) << diff.out;
  size_t at = 0;  // the headings, in this order
  for (const char* heading : {"Inputs:", "Arms: both", "Analyses:", "Output:", "Resume:"}) {
    const size_t found = diff.out.find(heading, at);
    EXPECT_NE(found, std::string::npos) << heading << " (in order) in\n" << diff.out;
    if (found != std::string::npos) at = found;
  }
  // Each arm's own flags are under --help-all (test_cli_user.cpp), in the same order.
  const CliResult all = run_cli({"diff", "--help-all"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  at = 0;
  for (const char* heading : {"Inputs:", "Arms: both", "Arm A only:", "Arm B only:", "Analyses:",
                              "Output:", "Resume:"}) {
    const size_t found = all.out.find(heading, at);
    EXPECT_NE(found, std::string::npos) << heading << " (in order) in\n" << all.out;
    if (found != std::string::npos) at = found;
  }
  std::string words, flat;  // descriptions wrap: the text with its runs of white space as one
  for (std::istringstream in(diff.out); in >> words;) flat += words + " ";
  EXPECT_NE(flat.find("no other flag but -f"), std::string::npos) << flat;
  // --resume is named where it is described (and by -f), not under each of ~50 options.
  size_t mentions = 0;
  for (size_t p = diff.out.find("--resume"); p != std::string::npos;
       p = diff.out.find("--resume", p + 1)) {
    ++mentions;
  }
  EXPECT_LE(mentions, 3u) << diff.out;
  for (const auto& line : lines_of(diff.out)) EXPECT_LE(line.size(), 120u) << line;  // bytes
  for (const char* cmd : {"sweep", "floor", "capture", "check", "length-curve"}) {
    const CliResult r = run_cli({cmd, "--help"});
    ASSERT_EQ(r.exit_code, 0) << cmd << r.err;
    EXPECT_EQ(r.out.find("Excludes"), std::string::npos) << cmd;
    EXPECT_NE(r.out.find("Inputs:"), std::string::npos) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("Output:"), std::string::npos) << cmd << "\n" << r.out;
  }
}

// =============================================================================================
// -f - : standard input

TEST(CliSlips, TextFromStandardInputIsTheFileItCameFrom) {
  HD_REQUIRE_SHARED();
  const std::vector<std::string> base = {"diff", "--a",       m260k(), "--b-quant",
                                         "Q8_0", "--chunk",   "64",    "--max-chunks",
                                         "2",    "--no-floor"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::string from_file = dir() + "/file.hdy", from_stdin = dir() + "/stdin.hdy";
  ASSERT_EQ(run_cli(with({"-f", tom(), "-o", from_file})).exit_code, 0);
  const CliResult r = run_cli_with_input(with({"-f", "-", "-o", from_stdin}), tom());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json a = show_json(from_file), b = show_json(from_stdin);
  EXPECT_EQ(a["kl_mean"], b["kl_mean"]);
  EXPECT_EQ(a["provenance"]["tokens"]["sha256"], b["provenance"]["tokens"]["sha256"]);
  EXPECT_EQ(a["provenance"]["text"]["sha256"], b["provenance"]["text"]["sha256"]);
  EXPECT_EQ(b["provenance"]["text"]["path"], "-");
  // The checks a file gets: empty, not UTF-8.
  hd::test::expect_refusal(
      run_cli_with_input(with({"-f", "-", "-o", dir() + "/e.hdy"}), "/dev/null"), 2,
      "the text on standard input is empty", "empty stdin");
  const std::string latin1 = dir() + "/latin1.txt";
  hd::test::write_file(latin1, "caf\xe9\n" + read_file(tom()));
  hd::test::expect_refusal(run_cli_with_input(with({"-f", "-", "-o", dir() + "/l.hdy"}), latin1), 2,
                           "the text on standard input is not valid UTF-8 (at byte 3)",
                           "latin-1 stdin");
  EXPECT_FALSE(fs::exists(dir() + "/e.hdy") || fs::exists(dir() + "/l.hdy"));
}

TEST(CliSlips, VerifyOfARunThatReadStandardInputNeedsTheTextAgain) {
  HD_REQUIRE_SHARED();
  const std::string out = dir() + "/sweep-stdin.hdy";
  const CliResult made =
      run_cli_with_input({"sweep", "--a", m260k(), "--b-ub", "7", "-f", "-", "--chunk", "32",
                          "--max-chunks", "2", "--no-floor", "-o", out},
                         tom());
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const CliResult bare = run_cli({"verify", out});
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("read its text from standard input: give it again, heterodyne verify " +
                          out + " -f FILE"),
            std::string::npos)
      << bare.err;
  const std::string other = dir() + "/other.txt";
  hd::test::write_file(other, "Another text entirely.\n" + read_file(tom()));
  const CliResult wrong = run_cli({"verify", out, "-f", other});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("is not the one this run read"), std::string::npos) << wrong.err;
  const CliResult again = run_cli({"verify", out, "-f", tom()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("reproduce bitwise"), std::string::npos) << again.err;
  EXPECT_EQ(run_cli_with_input({"verify", out, "-f", "-"}, tom()).exit_code, 0);
}

TEST(CliSlips, ResumeOfARunThatReadStandardInputChecksTheTextGivenAgain) {
  HD_REQUIRE_SHARED();
  // A model slow enough (32000-token vocabulary) that the run can be stopped after a chunk.
  const std::string model = dir() + "/tiny-llama.gguf";
  ASSERT_EQ(
      run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o", model}).exit_code, 0);
  const std::string out = dir() + "/resume-stdin.hdy";
  const pid_t pid =
      hd::test::spawn_cli({"diff", "--a", model, "--b-quant", "Q4_0", "-f", "-", "--chunk", "64",
                           "--max-chunks", "8", "-t", "2", "-o", out},
                          "/dev/null", dir() + "/resume.err", tom());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (hd::test::stored_chunks(out) < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const int kept = hd::test::stored_chunks(out);
  ASSERT_GE(kept, 1);
  ASSERT_LT(kept, 8) << "the run ended before it could be stopped";

  hd::test::expect_refused({"diff", "--resume", out},
                           "give it again, heterodyne diff --resume " + out + " -f FILE");
  const std::string other = dir() + "/other-resume.txt";
  hd::test::write_file(other, read_file(tom()) + "one more line\n");
  hd::test::expect_refused({"diff", "--resume", out, "-f", other}, "is not the one this run read");
  EXPECT_EQ(hd::test::stored_chunks(out), kept);
  const CliResult r = run_cli_with_input({"diff", "--resume", out, "-f", "-"}, tom());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(hd::test::stored_chunks(out), 8);
  EXPECT_EQ(run_cli({"verify", out}).exit_code, 0);  // a diff stores its tokens: no text needed
}

// =============================================================================================
// export --table

TEST(CliSlips, ExportWritesEveryTableItsRowsAsStored) {
  HD_REQUIRE_SHARED();
  const std::string e = hd::test::make_experiment(dir() + "/export.hdy", {"--transplants"});
  const auto chunks = hd::store::Experiment::open(e, false).read_all();
  // Positions are the default, and --positions still names them.
  const CliResult plain = run_cli({"export", e});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, run_cli({"export", e, "--positions"}).out);
  EXPECT_EQ(plain.out, run_cli({"export", e, "--table", "positions"}).out);

  const CliResult layers = run_cli({"export", e, "--table", "layers", "--format", "jsonl"});
  ASSERT_EQ(layers.exit_code, 0) << layers.err;
  std::vector<json> rows;
  for (const auto& l : lines_of(layers.out)) rows.push_back(json::parse(l));
  size_t i = 0, floor_rows = 0;
  for (const auto& c : chunks) {
    for (const auto* cmp : hd::analysis::comparisons_of(c)) {
      for (const auto& r : cmp->layers) {
        ASSERT_LT(i, rows.size());
        const json& j = rows[i++];
        EXPECT_EQ(j["comparison"], cmp == &c.diff ? "diff" : cmp == &*c.floor ? "floor" : "floor_b");
        floor_rows += cmp == &c.diff ? 0 : 1;
        EXPECT_EQ(j["chunk"], c.chunk);
        EXPECT_EQ(j["layer"], r.layer);
        EXPECT_EQ(j["pos"], r.pos);
        EXPECT_EQ(j["rel_err"].get<double>(), r.diff.rel_err);  // bitwise
        EXPECT_EQ(j["cosine"].get<double>(), r.diff.cosine);
      }
    }
  }
  EXPECT_EQ(i, rows.size());
  EXPECT_GT(floor_rows, 0u);

  const CliResult tr = run_cli({"export", e, "--table", "transplants"});
  ASSERT_EQ(tr.exit_code, 0) << tr.err;
  const auto tr_lines = lines_of(tr.out);
  ASSERT_FALSE(tr_lines.empty());
  EXPECT_EQ(tr_lines[0], "chunk,direction,step,point,pos,kl");
  size_t expected = 0;
  for (const auto& c : chunks)
    expected += c.transplants->denoise.size() + c.transplants->noise.size();
  EXPECT_EQ(tr_lines.size(), expected + 1);
  const auto& first = chunks[0].transplants->denoise[0];
  std::stringstream first_row(tr_lines[1]);
  std::vector<std::string> f;
  for (std::string x; std::getline(first_row, x, ',');) f.push_back(x);
  ASSERT_EQ(f.size(), 6u) << tr_lines[1];
  EXPECT_EQ(f[1], "denoise");
  EXPECT_EQ(f[3], chunks[0].transplants->points[static_cast<size_t>(first.step - 1)]);
  EXPECT_EQ(std::strtod(f[5].c_str(), nullptr), first.kl);

  const CliResult fl = run_cli({"export", e, "--table", "flips", "--format", "jsonl"});
  ASSERT_EQ(fl.exit_code, 0) << fl.err;
  const auto flips = hd::analysis::flip_report(chunks).flips;
  const auto fl_lines = lines_of(fl.out);
  ASSERT_EQ(fl_lines.size(), flips.size());
  for (size_t k = 0; k < flips.size(); ++k) {
    const json j = json::parse(fl_lines[k]);
    EXPECT_EQ(j["pos"], flips[k].pos);
    EXPECT_NE(j["top1_a"], j["top1_b"]);
    EXPECT_EQ(j["kl"].get<double>(), flips[k].kl);
  }
  // A diff without transplants has no such table: one line, nothing written.
  const std::string plain_run = hd::test::make_experiment(dir() + "/no-transplants.hdy");
  const std::string out = dir() + "/t.csv";
  hd::test::expect_refused({"export", plain_run, "--table", "transplants", "-o", out},
                           "holds no transplants");
  hd::test::expect_refused({"export", plain_run, "--table", "transplants"}, "holds no transplants");
  EXPECT_FALSE(fs::exists(out));
}

// =============================================================================================
// --llama-build

TEST(CliSlips, AMalformedLlamaBuildIsRefusedBeforeAnythingIsBuilt) {
  HD_REQUIRE_SHARED();
  const std::string cache = dir() + "/cache";
  fs::create_directories(cache);
  hd::test::ScopedCacheDir scoped(cache);
  const std::string out = dir() + "/spec.hdy";
  struct Case {
    std::string spec, says;
  };
  for (const Case& c : std::vector<Case>{
           {"npm:node-llama-cpp", "names no release: give npm:node-llama-cpp@X.Y.Z"},
           {"npm:node-llama-cpp@latest", "names no release"},
           {"npm:llama.cpp@1.0.0", "only node-llama-cpp releases carry llama.cpp"},
           {"pinned,GGML_NATIVE", "'GGML_NATIVE' is not a CMake OPTION=VALUE"},
           {"pinned,", "'' is not a CMake OPTION=VALUE"},
           {"/nonexistent/llama.cpp,GGML_NATIVE=OFF", "is not pinned, npm:node-llama-cpp@X.Y.Z"},
           {dir(), "is not a llama.cpp tree (no include/llama.h)"},
       }) {
    const auto t0 = std::chrono::steady_clock::now();
    expect_refused({"diff", "--a", m260k(), "--b-quant", "Q8_0", "--b-llama-build", c.spec, "-f",
                    tom(), "-o", out},
                   c.says);
    expect_refused({"sweep", "--a", m260k(), "--b-llama-build", c.spec, "-f", tom(), "-o", out},
                   c.says);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20)) << c.spec;
  }
  // Through the arm itself (capture checks no run configuration first).
  expect_refused({"capture", "-m", m260k(), "--llama-build", "npm:node-llama-cpp", "-f", tom(),
                  "-o", dir() + "/ref-spec"},
                 "names no release");
  EXPECT_FALSE(fs::exists(cache + "/workers")) << "a worker build was started";
  EXPECT_FALSE(fs::exists(out));
}

// =============================================================================================
// --skip-unencodable

namespace {

// The lines of `text` the model's vocabulary cannot encode, found one by one.
size_t unencodable_lines(const std::string& model, const std::string& text, std::string& kept) {
  const auto m = hd::engine::model_load(model);
  size_t n = 0;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    try {
      (void)m->tokenize(line, false);
      kept += line + "\n";
    } catch (const hd::InputError&) {
      ++n;
    }
  }
  return n;
}

}  // namespace

TEST(CliSlips, SkipUnencodableDropsTheLinesCountsThemAndResumesAndVerifiesTheSame) {
  HD_REQUIRE_SHARED();
  std::string kept;
  const size_t bad = unencodable_lines(m656k(), read_file(tom()), kept);
  ASSERT_GT(bad, 0u)
      << "TinyStories-656K encodes Tom Sawyer whole: the test needs a line it cannot";
  const std::string out = dir() + "/skip.hdy";
  const std::vector<std::string> args = {"diff", "--a", m656k(),   "--b-quant", "Q8_0",
                                         "-f",   tom(), "--chunk", "64",        "--max-chunks",
                                         "3",    "-o",  out};
  std::vector<std::string> skip = args;
  skip.push_back("--skip-unencodable");
  EXPECT_EQ(run_cli(args).exit_code, 2);  // refused at the first line, as before
  const CliResult r = run_cli(skip);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--skip-unencodable: dropped " + std::to_string(bad) + " line(s)"),
            std::string::npos)
      << r.err;
  const json j = show_json(out);
  EXPECT_EQ(j["provenance"]["text"]["unencodable_lines_dropped"], bad);
  EXPECT_EQ(j["provenance"]["text"]["sha256"].get<std::string>().size(), 64u);
  // The tokens are those of the text without the lines (here: the file the test kept).
  const std::string kept_file = dir() + "/kept.txt";
  hd::test::write_file(kept_file, kept);
  const std::string ref = dir() + "/kept.hdy";
  ASSERT_EQ(run_cli({"diff", "--a", m656k(), "--b-quant", "Q8_0", "-f", kept_file, "--chunk", "64",
                     "--max-chunks", "3", "-o", ref})
                .exit_code,
            0);
  EXPECT_EQ(show_json(ref)["provenance"]["tokens"]["sha256"], j["provenance"]["tokens"]["sha256"]);
  EXPECT_EQ(show_json(ref)["kl_mean"], j["kl_mean"]);
  EXPECT_EQ(run_cli({"verify", out}).exit_code, 0);

  // floor and sweep re-read the text to verify: the stored setting drops the same lines.
  const std::string floor = dir() + "/skip-floor.hdy";
  const CliResult f =
      run_cli({"floor", "-m", m656k(), "-f", tom(), "--skip-unencodable", "--ub", "7,16",
               "--ref-ub", "64", "--chunk", "64", "--max-chunks", "1", "-o", floor});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(run_cli({"verify", floor}).exit_code, 0);
  // capture records it, and check drops the same lines before comparing tokenizations.
  const std::string refdir = dir() + "/skip-ref";
  ASSERT_EQ(run_cli({"capture", "-m", m656k(), "-f", tom(), "--skip-unencodable", "--max-tokens",
                     "32", "-o", refdir})
                .exit_code,
            0);
  const json manifest = json::parse(read_file(refdir + "/manifest.json"));
  EXPECT_EQ(manifest["text"]["unencodable_lines_dropped"], bad);
  ASSERT_EQ(run_cli({"calibrate", "--reference", refdir}).exit_code, 0);
  const CliResult check = run_cli({"check", "--reference", refdir, "-m", m656k()});
  EXPECT_EQ(check.exit_code, 0) << check.err << check.out;
  const CliResult lc = run_cli({"length-curve", "--a", m656k(), "--b-ub", "7", "-f", tom(),
                                "--skip-unencodable", "--lengths", "16,32"});
  EXPECT_EQ(lc.exit_code, 0) << lc.err;
}
