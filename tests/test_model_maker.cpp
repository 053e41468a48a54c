// Random-weight model presets and the quantization cache (tiny presets only, to stay fast).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/sha256.h"
#include "engine/model_maker.h"
#include "engine/quantize.h"
#include "errors.h"
#include "test_support.h"

namespace fs = std::filesystem;
using hd::engine::ModelSpec;

namespace {

class ModelMakerTest : public testing::Test {
 protected:
  // One directory and one f16 tiny-llama shared by every test: writing it is the slow part.
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::path(testing::TempDir()) /
                        ("hd-model-maker-" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    f16_ = new std::string((*dir_ / "tiny-llama-f16.gguf").string());
    hd::engine::make_model({"tiny-llama", 7, "f16"}, *f16_);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete f16_;
  }

  static std::string path(const std::string& name) { return (*dir_ / name).string(); }

  static fs::path* dir_;
  static std::string* f16_;
};

fs::path* ModelMakerTest::dir_ = nullptr;
std::string* ModelMakerTest::f16_ = nullptr;

TEST_F(ModelMakerTest, ListsPresets) {
  const auto presets = hd::engine::model_presets();
  EXPECT_NE(std::find(presets.begin(), presets.end(), "tiny-llama"), presets.end());
  EXPECT_NE(std::find(presets.begin(), presets.end(), "tiny-qwen3"), presets.end());
  EXPECT_NE(std::find(presets.begin(), presets.end(), "qwen3-0.6b"), presets.end());
  EXPECT_NE(std::find(presets.begin(), presets.end(), "llama3.2-3b"), presets.end());
}

TEST_F(ModelMakerTest, SameSeedGivesIdenticalBytes) {
  const std::string again = path("again.gguf");
  hd::engine::make_model({"tiny-llama", 7, "F16"}, again);
  EXPECT_EQ(hd::sha256_file(*f16_), hd::sha256_file(again));
}

TEST_F(ModelMakerTest, DifferentSeedGivesDifferentBytes) {
  const std::string other = path("seed8.gguf");
  hd::engine::make_model({"tiny-llama", 8, "f16"}, other);
  EXPECT_EQ(fs::file_size(other), fs::file_size(*f16_));
  EXPECT_NE(hd::sha256_file(*f16_), hd::sha256_file(other));
}

TEST_F(ModelMakerTest, LeavesNoTemporaryFiles) {
  for (const auto& entry : fs::directory_iterator(*dir_)) {
    EXPECT_EQ(entry.path().string().find(".part-"), std::string::npos) << entry.path();
  }
}

TEST_F(ModelMakerTest, RefusesUnknownPresetAndType) {
  EXPECT_THROW(hd::engine::make_model({"tiny-gpt", 1, "f32"}, path("x.gguf")), hd::InputError);
  EXPECT_THROW(hd::engine::make_model({"tiny-llama", 1, "q4_0"}, path("x.gguf")), hd::InputError);
  EXPECT_FALSE(fs::exists(path("x.gguf")));
}

TEST_F(ModelMakerTest, KnowsQuantTypesCaseInsensitively) {
  EXPECT_TRUE(hd::engine::is_quant_type("Q4_K_M"));
  EXPECT_TRUE(hd::engine::is_quant_type("q4_k_m"));
  EXPECT_TRUE(hd::engine::is_quant_type("bf16"));
  EXPECT_FALSE(hd::engine::is_quant_type("Q9_9"));
  EXPECT_EQ(hd::engine::canonical_quant_type("q4_k"), "Q4_K_M");
  EXPECT_NE(hd::engine::quantize_type_names().find("Q8_0"), std::string::npos);
  EXPECT_THROW(hd::engine::quantize_model(*f16_, path("q.gguf"), "Q9_9", 2), hd::InputError);
  EXPECT_THROW(hd::engine::quantize_model(path("missing.gguf"), path("q.gguf"), "Q4_0", 2),
               hd::InputError);
}

TEST_F(ModelMakerTest, QuantizedFilesAreSmaller) {
  for (const std::string type : {"Q4_0", "Q4_K_M"}) {
    const std::string out = path("tiny-" + type + ".gguf");
    hd::engine::quantize_model(*f16_, out, type, 2);
    ASSERT_TRUE(fs::exists(out)) << type;
    EXPECT_LT(fs::file_size(out), fs::file_size(*f16_)) << type;
  }
}

TEST_F(ModelMakerTest, EnsureQuantizedReusesTheCachedFile) {
  const hd::test::ScopedCacheDir cache(path("cache"));
  const std::string first = hd::engine::ensure_quantized(*f16_, "q4_0", 2);
  ASSERT_TRUE(fs::exists(first));
  EXPECT_EQ(first.rfind(path("cache/quantized/"), 0), 0u) << first;
  EXPECT_NE(first.find("-Q4_0.gguf"), std::string::npos) << first;
  const auto written = fs::last_write_time(first);

  const std::string second = hd::engine::ensure_quantized(*f16_, "Q4_0", 2);
  EXPECT_EQ(second, first);
  EXPECT_EQ(fs::last_write_time(second), written);
  EXPECT_EQ(hd::engine::quantized_cache_path(*f16_, "Q4_0"), first);
}

}  // namespace
