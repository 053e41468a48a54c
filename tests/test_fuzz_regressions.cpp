// Every input a fuzzer ever crashed on (fuzz/regressions/<target>/, kept forever) and every
// seed (fuzz/corpus/<target>/) runs through the fuzz target's body: each must end normally or
// in InputError / RuntimeError. Under make test-asan this also runs them under the sanitizers.
#include <gtest/gtest.h>

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

TEST(FuzzRegressions, Texts) {
  HD_REQUIRE_SHARED();
  const auto model = hd::engine::model_load(hd::test::shared_path("models/stories260K.gguf"));
  replay("text", [&](const std::string& b) { hd::fuzz::text(b, *model); }, 3);
}
