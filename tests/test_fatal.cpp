// What cannot be caught as an exception still ends as one line and exit 1 (issue 15, class 3):
// a GGML_ASSERT inside llama.cpp (a malformed model no check of ours refuses first) and SIGBUS
// (a model file cut short while it is mapped). The output is left as it was before the run, or,
// once the run has stored chunks, with those chunks and the way to resume.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>

#include "gguf.h"
#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::CliResult;
using hd::test::read_file;
using hd::test::run_cli;
using hd::test::shared_path;

namespace {

std::string seed_model() { return std::string(HD_SOURCE_DIR) + "/fuzz/corpus/gguf/seed-llama.gguf"; }

// The seed with one more key.
std::string with_u32(const std::string& dir, const std::string& key, uint32_t value) {
  const std::string out = dir + "/" + key + ".gguf";
  hd::test::rewrite_gguf(seed_model(), out,
                         [&](gguf_context* g, ggml_context*) { gguf_set_val_u32(g, key.c_str(), value); });
  return out;
}

std::string last_line(const std::string& s) {
  const size_t end = s.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const size_t start = s.rfind('\n', end);
  return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

// expert_used_count on a dense llama: llama.cpp asserts n_expert_used == 0 while it reads the
// hyperparameters, a check heterodyne leaves to it. The abort becomes one line naming the
// assertion and the file; no gdb backtrace on stdout; the old output stays whole.
TEST(FatalExits, AFailedGgmlAssertIsOneLineAndTheOutputIsKept) {
  const std::string dir = hd::test::temp_dir("fatal-assert");
  const std::string model = with_u32(dir, "llama.expert_used_count", 2);
  std::string text;
  for (int i = 0; i < 8; ++i) text += "Once upon a time there was a little model.\n";
  hd::test::write_file(dir + "/t.txt", text);
  const std::string out = dir + "/out.hdy";
  hd::test::write_file(out, "the old experiment\n");
  const CliResult r = run_cli({"diff", "--a", model, "--b", model, "-f", dir + "/t.txt", "--chunk",
                               "8", "-o", out, "--force"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("heterodyne: error: llama.cpp stopped on a failed internal check", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("GGML_ASSERT"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(model), std::string::npos) << "the message does not name the file: " << r.err;
  EXPECT_TRUE(r.out.empty()) << "a backtrace or other output on stdout: " << r.out;
  EXPECT_EQ(read_file(out), "the old experiment\n");
  EXPECT_FALSE(fs::exists(out + ".part"));
}

// The same assertion inside llama.cpp's quantizer, which writes into this command's temporary
// output: the abort callback removes it.
TEST(FatalExits, AnAbortWhileQuantizingRemovesTheTemporaryOutput) {
  const std::string dir = hd::test::temp_dir("fatal-quantize");
  const std::string model = with_u32(dir, "llama.expert_used_count", 2);
  const std::string out = dir + "/q.gguf";
  const CliResult r = run_cli({"quantize", model, out, "Q8_0"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
  EXPECT_NE(r.err.find("GGML_ASSERT"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("while quantizing '" + model + "'"), std::string::npos) << r.err;
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().string().find("q.gguf"), std::string::npos) << "left: " << e.path();
  }
}

// Checks llama.cpp would otherwise stop on are made first: one line, exit 2.
TEST(FatalExits, MalformedMetadataIsRefusedBeforeLlamaCppReadsIt) {
  const std::string dir = hd::test::temp_dir("fatal-validate");
  std::string text;
  for (int i = 0; i < 8; ++i) text += "Once upon a time there was a little model.\n";
  hd::test::write_file(dir + "/t.txt", text);
  struct Case {
    std::string key;
    float value;
    std::string phrase;
  };
  for (const Case& c : {Case{"llama.attention.layer_norm_rms_epsilon", -1e-5f, "norm epsilon"},
                        Case{"llama.attention.layer_norm_rms_epsilon", NAN, "norm epsilon"},
                        Case{"llama.attention.layer_norm_rms_epsilon", INFINITY, "norm epsilon"}}) {
    const std::string model = dir + "/eps.gguf";
    hd::test::rewrite_gguf(seed_model(), model, [&](gguf_context* g, ggml_context*) {
      gguf_set_val_f32(g, c.key.c_str(), c.value);
    });
    const CliResult r = run_cli({"diff", "--a", model, "--b", model, "-f", dir + "/t.txt",
                                 "--chunk", "8", "-o", dir + "/o.hdy"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
    EXPECT_NE(r.err.find(c.phrase), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir + "/o.hdy"));
  }
  // Two tokens with one text: llama.cpp asserts its text-to-id map is as long as its list.
  {
    const std::string model = dir + "/dup.gguf";
    hd::test::rewrite_gguf(seed_model(), model, [](gguf_context* g, ggml_context*) {
      const int64_t k = gguf_find_key(g, "tokenizer.ggml.tokens");
      std::vector<std::string> texts;
      for (size_t i = 0; i < gguf_get_arr_n(g, k); ++i) texts.push_back(gguf_get_arr_str(g, k, i));
      texts[100] = texts[101];
      std::vector<const char*> ptrs;
      for (const auto& t : texts) ptrs.push_back(t.c_str());
      gguf_set_arr_str(g, "tokenizer.ggml.tokens", ptrs.data(), ptrs.size());
    });
    const CliResult r = run_cli({"diff", "--a", model, "--b", model, "-f", dir + "/t.txt",
                                 "--chunk", "8", "-o", dir + "/o.hdy"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("tokens 100 and 101 have the same text"), std::string::npos) << r.err;
  }
}

// The model cut short while a run has it mapped: SIGBUS becomes one line naming the file, and
// the chunks already stored stay, with how to finish.
TEST(FatalExits, AModelCutShortWhileMappedIsOneLineAndTheStoredChunksStay) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("fatal-sigbus");
  const std::string model = dir + "/model.gguf";
  fs::copy_file(shared_path("models/stories260K.gguf"), model);
  const std::string out = dir + "/out.hdy", err = dir + "/err";
  const int pid = hd::test::spawn_cli({"diff", "--a", model, "--b", model, "-f",
                                       shared_path("corpora/tom-sawyer.txt"), "--chunk", "64",
                                       "--max-chunks", "400", "-o", out},
                                      "/dev/null", err);
  bool started = false;
  for (int i = 0; i < 3000 && !started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    started = read_file(err).find("chunk 2/") != std::string::npos;
  }
  ASSERT_TRUE(started) << read_file(err);
  fs::resize_file(model, 4096);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::string e = read_file(err);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status) << "\n" << e;
  EXPECT_EQ(WEXITSTATUS(status), 1) << e;
  EXPECT_EQ(count(e, "heterodyne: error: "), 1u) << e;
  const std::string line = last_line(e);
  EXPECT_NE(line.find("'" + model + "' was cut short while it was in use (SIGBUS)"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("finish with heterodyne diff --resume " + out), std::string::npos) << line;
  EXPECT_GE(hd::test::stored_chunks(out), 1);
}
