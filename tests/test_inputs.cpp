// Inputs never hang or flood a command (issue 15, class 4), and text is strict UTF-8 (class 6):
// FIFOs and devices are refused before they are opened, a text is read to a bounded size and
// tokenized only as far as the run needs (with the same tokens as the whole text), sizes are
// checked in 64 bits before anything is allocated.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/utf8.h"
#include "engine/model.h"
#include "run/text.h"
#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::CliResult;
using hd::test::read_file;
using hd::test::shared_path;

namespace {

std::string dir() {
  static const std::string d = hd::test::temp_dir("inputs");
  return d;
}

// Runs the binary with a deadline: a command that blocks (on a FIFO, say) is killed and
// reported as exit -1 instead of hanging the suite.
CliResult run_within(const std::vector<std::string>& args, int seconds) {
  static int n = 0;
  const std::string out = dir() + "/run" + std::to_string(n) + ".out";
  const std::string err = dir() + "/run" + std::to_string(n++) + ".err";
  const int pid = hd::test::spawn_cli(args, out, err);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return {-1, read_file(out), read_file(err)};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_file(out),
          read_file(err)};
}

}  // namespace

TEST(InputPaths, FifosAndDevicesAreRefusedNotWaitedOn) {
  HD_REQUIRE_SHARED();
  const std::string m = shared_path("models/stories260K.gguf");
  const std::string t = shared_path("corpora/tom-sawyer.txt");
  const std::string fifo_text = dir() + "/text.fifo", fifo_model = dir() + "/model.gguf",
                    fifo_exp = dir() + "/fifo.hdy";
  for (const auto& f : {fifo_text, fifo_model, fifo_exp}) ASSERT_EQ(::mkfifo(f.c_str(), 0644), 0);
  const std::string out = dir() + "/never.hdy";
  struct Case {
    std::vector<std::string> args;
    std::string phrase;
  };
  const std::vector<Case> cases = {
      {{"diff", "--a", m, "--b-quant", "Q8_0", "-f", fifo_text, "-o", out},
       "is a FIFO, not a regular file"},
      {{"diff", "--a", m, "--b-quant", "Q8_0", "-f", "/dev/zero", "-o", out},
       "is a character device, not a regular file"},
      {{"diff", "--a", fifo_model, "--b-quant", "Q8_0", "-f", t, "-o", out},
       "is a FIFO, not a regular file"},
      {{"diff", "--a", m, "--b", "/dev/zero", "-f", t, "-o", out},
       "is a character device, not a regular file"},
      {{"quantize", fifo_model, dir() + "/q.gguf", "Q8_0"}, "is a FIFO, not a regular file"},
      {{"show", fifo_exp}, "is a FIFO, not a regular file"},
      {{"show", fifo_exp, "--json"}, "is a FIFO, not a regular file"},
      {{"export", fifo_exp, "--positions"}, "is a FIFO, not a regular file"},
      {{"report", fifo_exp, "-o", dir() + "/r.html"}, "is a FIFO, not a regular file"},
      {{"verify", fifo_exp}, "is a FIFO, not a regular file"},
      {{"diff", "--resume", fifo_exp}, "is a FIFO, not a regular file"},
      {{"capture", "--model", m, "-f", fifo_text, "-o", dir() + "/ref"},
       "is a FIFO, not a regular file"},
      {{"length-curve", "--a", m, "--b-ub", "7", "-f", "/dev/zero", "--lengths", "8"},
       "is a character device, not a regular file"},
  };
  for (const Case& c : cases) {
    const CliResult r = run_within(c.args, 20);
    hd::test::expect_refusal(r, 2, c.phrase, c.args[0] + " " + c.args.back());
  }
  EXPECT_FALSE(fs::exists(out));
  // A reference whose manifest is a FIFO.
  fs::create_directories(dir() + "/fifo-ref");
  ASSERT_EQ(::mkfifo((dir() + "/fifo-ref/manifest.json").c_str(), 0644), 0);
  hd::test::expect_refusal(run_within({"check", "--reference", dir() + "/fifo-ref", "--model", m}, 20), 2,
                  "is a FIFO, not a regular file", "check");
  hd::test::expect_refusal(run_within({"quant-risk", "--reference", dir() + "/fifo-ref", "--bits", "8"}, 20), 2,
                  "is a FIFO, not a regular file", "quant-risk");
}

TEST(InputPaths, TextsAreBoundedAndOnlyWhatTheChunksNeedIsTokenized) {
  HD_REQUIRE_SHARED();
  const std::string m = shared_path("models/stories260K.gguf");
  const std::string tom = read_file(shared_path("corpora/tom-sawyer.txt"));
  // Larger than heterodyne reads: refused from its size, without reading it (a sparse file).
  const std::string huge = dir() + "/huge.txt";
  { std::ofstream(huge) << "x"; }
  fs::resize_file(huge, (size_t{1} << 30) + 4096);
  const auto t0 = std::chrono::steady_clock::now();
  hd::test::expect_refusal(run_within({"diff", "--a", m, "--b-quant", "Q8_0", "-f", huge, "--max-chunks",
                              "2", "-o", dir() + "/huge.hdy"},
                             20),
                  2, "more than the 1024.0 MiB heterodyne reads", "1 GiB text");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  fs::remove(huge);
  // 100 MB of real text: with --max-chunks only a prefix is tokenized (quickly, in bounded
  // memory); without, it is more than heterodyne tokenizes at once.
  const std::string big = dir() + "/big.txt";
  {
    std::ofstream out(big, std::ios::binary);
    for (size_t written = 0; written < (size_t{100} << 20); written += tom.size()) out << tom;
  }
  const auto t1 = std::chrono::steady_clock::now();
  const CliResult ok = run_within({"diff", "--a", m, "--b-quant", "Q8_0", "-f", big, "--chunk",
                                   "64", "--max-chunks", "2", "--no-floor", "-o",
                                   dir() + "/big.hdy"},
                                  120);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_LT(seconds, 30) << "the whole text was tokenized?";
  rusage ru{};
  ::getrusage(RUSAGE_CHILDREN, &ru);
  EXPECT_LT(ru.ru_maxrss, 1 << 20) << "peak RSS of a child " << ru.ru_maxrss << " KiB";
  hd::test::expect_refusal(run_within({"diff", "--a", m, "--b-quant", "Q8_0", "-f", big, "--chunk", "64",
                              "-o", dir() + "/all.hdy"},
                             60),
                  2, "tokenizes at most 64.0 MiB at once", "100 MB text, all chunks");
  fs::remove(big);
}

// The prefix rule gives exactly the tokens of the whole text, on both tokenizers the shared
// models have (SentencePiece with byte fallback; one without).
TEST(InputPaths, APrefixTokenizesLikeTheWholeText) {
  HD_REQUIRE_SHARED();
  for (const auto& [model, text] :
       {std::pair<std::string, std::string>{"models/stories260K.gguf", "corpora/tom-sawyer.txt"},
        {"models/TinyStories-656K.f16.gguf", "corpora/tom-sawyer.656k-safe.txt"},
        {"models/stories260K.gguf", "corpora/python-stdlib-small.py"}}) {
    const auto m = hd::engine::model_load(shared_path(model));
    const std::string t = read_file(shared_path(text));
    const auto whole = m->tokenize(t, true);
    for (size_t needed : {size_t{1}, size_t{64}, size_t{1000}, size_t{12345}, whole.size()}) {
      const auto prefix = hd::run::tokenize_text(*m, t, needed);
      ASSERT_EQ(prefix.size(), std::min(needed, whole.size())) << model << " " << needed;
      EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), whole.begin()))
          << model << " " << text << ": the first " << needed << " tokens differ";
    }
  }
}

TEST(InputPaths, SizesAreCheckedInSixtyFourBitsBeforeAllocating) {
  HD_REQUIRE_SHARED();
  const std::string m = shared_path("models/stories260K.gguf");
  const std::string t = shared_path("corpora/tom-sawyer.txt");
  for (const std::string steps : {"2147483647", "2147483600"}) {
    const CliResult r = run_within({"capture", "--model", m, "-f", t, "--max-tokens", "64",
                                    "--decode", steps, "-o", dir() + "/ref-" + steps},
                                   20);
    hd::test::expect_refusal(r, 2, "do not fit the model's context", "capture --decode " + steps);
  }
  const std::string short_text = dir() + "/short.txt";
  hd::test::write_file(short_text, read_file(t).substr(0, 3000));
  const CliResult big = run_within({"diff", "--a", m, "--b-quant", "Q8_0", "-f", short_text,
                                    "--chunk", "64", "--max-chunks", "2147483647", "--no-floor",
                                    "-o", dir() + "/many.hdy"},
                                   60);
  EXPECT_EQ(big.exit_code, 0) << big.err;  // the chunks the text has, not 2^31 of them
}

TEST(Utf8, StrictDecodingRefusesWhatRfc3629Forbids) {
  using hd::first_invalid_utf8;
  EXPECT_EQ(first_invalid_utf8("plain ascii"), std::nullopt);
  EXPECT_EQ(first_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::nullopt);
  EXPECT_EQ(first_invalid_utf8("\xed\x9f\xbf"), std::nullopt);      // U+D7FF
  EXPECT_EQ(first_invalid_utf8("\xee\x80\x80"), std::nullopt);      // U+E000
  EXPECT_EQ(first_invalid_utf8("\xf4\x8f\xbf\xbf"), std::nullopt);  // U+10FFFF
  EXPECT_EQ(first_invalid_utf8(std::string("a\0b", 3)), std::nullopt);
  EXPECT_EQ(first_invalid_utf8("ab\xc0\xaf"), 2u);          // overlong '/'
  EXPECT_EQ(first_invalid_utf8("\xc1\xbf"), 0u);            // overlong
  EXPECT_EQ(first_invalid_utf8("x\xe0\x80\xaf"), 1u);       // overlong, 3 bytes
  EXPECT_EQ(first_invalid_utf8("\xf0\x80\x80\xaf"), 0u);    // overlong, 4 bytes
  EXPECT_EQ(first_invalid_utf8("\xed\xa0\x80"), 0u);        // U+D800, a surrogate
  EXPECT_EQ(first_invalid_utf8("\xed\xbf\xbf"), 0u);        // U+DFFF
  EXPECT_EQ(first_invalid_utf8("\xf4\x90\x80\x80"), 0u);    // U+110000
  EXPECT_EQ(first_invalid_utf8("\xf5\x80\x80\x80"), 0u);
  EXPECT_EQ(first_invalid_utf8("\xff"), 0u);
  EXPECT_EQ(first_invalid_utf8("ok\x80"), 2u);              // a lone continuation
  EXPECT_EQ(first_invalid_utf8("\xe2\x82"), 0u);            // truncated
  EXPECT_EQ(first_invalid_utf8("\xe2\x28\xa1"), 0u);        // bad continuation
}

TEST(Utf8, EscapingKeepsEveryByteAndIsValid) {
  using hd::escape_invalid_utf8;
  EXPECT_EQ(escape_invalid_utf8("caf\xc3\xa9"), "caf\xc3\xa9");  // valid: as it is
  EXPECT_EQ(escape_invalid_utf8("\xe2"), "\\xE2");              // half of "—": a byte token
  EXPECT_EQ(escape_invalid_utf8("a\xe2\x80z\xff"), "a\\xE2\\x80z\\xFF");
  EXPECT_EQ(hd::first_invalid_utf8(escape_invalid_utf8("\xc0\xaf\xed\xa0\x80")), std::nullopt);
}

TEST(Utf8, TextFilesThatAreNotStrictUtf8AreOneLine) {
  HD_REQUIRE_SHARED();
  const std::string m = shared_path("models/stories260K.gguf");
  const std::string tom = read_file(shared_path("corpora/tom-sawyer.txt")).substr(0, 4000);
  int n = 0;
  for (const std::string bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80"}) {
    const std::string path = dir() + "/bad" + std::to_string(n++) + ".txt";
    hd::test::write_file(path, tom.substr(0, 100) + bad + tom.substr(100));
    hd::test::expect_refusal(run_within({"diff", "--a", m, "--b-quant", "Q8_0", "-f", path, "--chunk",
                                "64", "-o", dir() + "/bad.hdy"},
                               20),
                    2, "is not valid UTF-8 (at byte 100)", path);
  }
}
