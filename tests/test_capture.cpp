// `capture`: a reference of every tap in forward order, reproducible to the bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/sha256.h"
#include "store/safetensors.h"
#include "test_support.h"

namespace {

std::vector<std::string> capture_args(const std::string& dir) {
  return {"capture",
          "-m",
          hd::test::shared_path("models/stories260K.gguf"),
          "-f",
          hd::test::shared_path("corpora/tom-sawyer.txt"),
          "--max-tokens",
          "96",
          "-o",
          dir};
}

}  // namespace

TEST(Capture, EveryTapInForwardOrderBitwiseReproducible) {
  HD_REQUIRE_SHARED();
  const std::string a = hd::test::temp_dir("capture-a"), b = hd::test::temp_dir("capture-b");
  for (const auto& dir : {a, b}) {
    const auto r = hd::test::run_cli(capture_args(dir));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(hd::sha256_file(a + "/activations.safetensors"),
            hd::sha256_file(b + "/activations.safetensors"));

  std::ifstream in(a + "/manifest.json");
  const auto manifest = nlohmann::json::parse(in);
  EXPECT_EQ(manifest["schema_version"], 1);
  EXPECT_EQ(manifest["model"]["architecture"], "llama");
  EXPECT_EQ(manifest["tokens"].size(), 96u);
  EXPECT_EQ(manifest["model"]["sha256"].get<std::string>().size(), 64u);
  // stories260K: 5 layers, llama names attn_out: 1 + 5 * 3 + 1 taps.
  std::vector<std::string> want = {"inp_embd"};
  for (int l = 0; l < 5; ++l) {
    for (const char* k : {"attn_out-", "ffn_out-", "l_out-"}) want.push_back(k + std::to_string(l));
  }
  want.push_back("result_norm");
  std::vector<std::string> names;
  for (const auto& t : manifest["taps"]) names.push_back(t["name"]);
  EXPECT_EQ(names, want);

  const auto file = hd::store::read_safetensors(a + "/activations.safetensors");
  ASSERT_EQ(file.tensors.size(), want.size());
  std::map<std::string, const hd::store::NamedTensor*> by_name;
  for (const auto& t : file.tensors) {
    EXPECT_EQ(t.shape, (std::vector<int64_t>{96, 64})) << t.name;
    by_name[t.name] = &t;
  }
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(file.tensors[i].name, want[i]);  // data order

  // A known answer: inp_embd is a table lookup, so two positions with the same token have
  // bitwise-equal rows, and l_out-0 = inp_embd + attn_out-0 + ffn_out-0 (the residual adds).
  const auto& tokens = manifest["tokens"];
  const auto& embd = by_name.at("inp_embd")->data;
  int pairs = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    for (size_t j = i + 1; j < tokens.size(); ++j) {
      if (tokens[i] != tokens[j]) continue;
      EXPECT_EQ(std::memcmp(&embd[i * 64], &embd[j * 64], 64 * sizeof(float)), 0);
      ++pairs;
    }
  }
  EXPECT_GT(pairs, 0);
  const auto& attn = by_name.at("attn_out-0")->data;
  const auto& ffn = by_name.at("ffn_out-0")->data;
  const auto& out = by_name.at("l_out-0")->data;
  for (size_t k = 0; k < out.size(); ++k) {
    EXPECT_NEAR(out[k], embd[k] + attn[k] + ffn[k], 1e-4f * (1 + std::fabs(out[k]))) << k;
  }
}

TEST(Capture, RefusesToOverwriteAndBadLengths) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("capture-twice");
  ASSERT_EQ(hd::test::run_cli(capture_args(dir)).exit_code, 0);
  const auto again = hd::test::run_cli(capture_args(dir));
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
  auto args = capture_args(hd::test::temp_dir("capture-short"));
  args[6] = "1";
  const auto short_run = hd::test::run_cli(args);
  EXPECT_EQ(short_run.exit_code, 2);
  EXPECT_NE(short_run.err.find("--max-tokens"), std::string::npos) << short_run.err;
}
