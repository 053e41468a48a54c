// Every input a fuzzer ever crashed on (fuzz/regressions/<target>/, kept forever) and every
// seed (fuzz/corpus/<target>/) runs through the fuzz target's body: each must end normally or
// in InputError / RuntimeError. Under make test-asan this also runs them under the sanitizers.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "engine/model.h"
#include "harness.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> inputs(const std::string& target) {
  std::vector<std::string> out;
  for (const char* where : {"fuzz/regressions/", "fuzz/corpus/"}) {
    const fs::path dir = fs::path(HD_SOURCE_DIR) / (where + target);
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void replay(const std::string& target, const std::function<void(const std::string&)>& body,
            size_t at_least) {
  const auto files = inputs(target);
  EXPECT_GE(files.size(), at_least) << target;
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    EXPECT_NO_THROW(body(hd::test::read_file(f)));
  }
}

}  // namespace

TEST(FuzzRegressions, Safetensors) { replay("safetensors", hd::fuzz::safetensors, 3); }
TEST(FuzzRegressions, ExperimentFiles) { replay("experiment", hd::fuzz::experiment, 3); }
TEST(FuzzRegressions, Manifests) { replay("manifest", hd::fuzz::manifest, 4); }
TEST(FuzzRegressions, ReportEmbedding) { replay("report", hd::fuzz::report_embed, 4); }
TEST(FuzzRegressions, SbatchValues) { replay("sbatch", hd::fuzz::sbatch_value, 6); }

// GGUF inputs go through the built binary, one process each: a failed GGML_ASSERT that no
// check refuses first must end through the abort handler (one line, exit 1), a refused file
// with exit 2, a good one with 0 — and nothing may die of a signal or print more than one line.
TEST(FuzzRegressions, GgufModels) {
  const auto files = inputs("gguf");
  EXPECT_GE(files.size(), 3u);
  const std::string dir = hd::test::temp_dir("fuzz-gguf");
  std::string text;
  for (int i = 0; i < 8; ++i) text += "Once upon a time there was a little model.\n";
  hd::test::write_file(dir + "/t.txt", text);
  int ran = 0;
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const std::string out = dir + "/run" + std::to_string(ran++) + ".hdy";
    const auto r = hd::test::run_cli({"diff", "--a", f, "--b", f, "-f", dir + "/t.txt", "--chunk",
                                      "8", "--max-chunks", "1", "--no-floor", "-t", "1", "-o",
                                      out});
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 2)
        << "exit " << r.exit_code << "\n" << r.err;
    if (r.exit_code != 0) {
      // Progress lines may come first; the error is the last line, and the only one.
      const std::string prefix = "heterodyne: error: ";
      size_t errors = 0;
      for (size_t at = r.err.find(prefix); at != std::string::npos; at = r.err.find(prefix, at + 1))
        ++errors;
      EXPECT_EQ(errors, 1u) << r.err;
      const size_t last = r.err.rfind('\n', r.err.size() - 2);
      EXPECT_EQ(r.err.compare(last == std::string::npos ? 0 : last + 1, prefix.size(), prefix), 0)
          << r.err;
      EXPECT_FALSE(fs::exists(out)) << "a failed run left its output";
      EXPECT_FALSE(fs::exists(out + ".part")) << "a failed run left its temporary";
    }
  }
}

TEST(FuzzRegressions, Texts) {
  HD_REQUIRE_SHARED();
  const auto model = hd::engine::model_load(hd::test::shared_path("models/stories260K.gguf"));
  replay("text", [&](const std::string& b) { hd::fuzz::text(b, *model); }, 3);
}
