// `capture`: a reference of every tap in forward order, reproducible to the bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/sha256.h"
#include "engine/arm_settings.h"
#include "engine/model.h"
#include "run/capture.h"
#include "run/reference.h"
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
  EXPECT_EQ(manifest["schema_version"], 2);
  EXPECT_EQ(manifest["decode"]["steps"], 0);
  EXPECT_EQ(manifest["model"]["architecture"], "llama");
  EXPECT_EQ(manifest["tokens"].size(), 96u);
  EXPECT_EQ(manifest["model"]["sha256"].get<std::string>().size(), 64u);
  // The build and machine as every experiment's provenance records them (run/provenance.h).
  EXPECT_EQ(manifest["llama_cpp"]["commit"].get<std::string>().size(), 40u);
  EXPECT_FALSE(manifest["machine"]["cpu"].get<std::string>().empty());
  EXPECT_TRUE(manifest["machine"].contains("os"));
  EXPECT_TRUE(manifest["heterodyne"].contains("version"));
  // Every arm setting of the first format but the model (its own entry); a later one only when
  // it is not its default (so a CPU capture's manifest reads as before), and they read back.
  size_t first_format = 0;
  hd::engine::for_each_arm_field([&](const auto& field) {
    const std::string key = field.info.key;
    if (field.info.required && key != "model") ++first_format;
    EXPECT_EQ(manifest["settings"].contains(key), field.info.required && key != "model") << key;
  });
  EXPECT_EQ(manifest["settings"].size(), first_format);
  const hd::engine::ArmSettings arm = hd::run::reference_arm(manifest);
  EXPECT_EQ(arm.model, hd::test::shared_path("models/stories260K.gguf"));
  EXPECT_EQ(arm.device, "cpu");
  EXPECT_GE(arm.n_threads, 1);  // the count used, not 0
  // stories260K: 5 layers, llama names attn_out: 1 + 5 * 4 + 1 taps.
  std::vector<std::string> want = {"inp_embd"};
  for (int l = 0; l < 5; ++l) {
    for (const char* k : {"kqv_out-", "attn_out-", "ffn_out-", "l_out-"})
      want.push_back(k + std::to_string(l));
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

// Decode steps continue the prompt through the KV cache: step i is position n + i. A prompt
// that already holds those tokens computes the same rows in one batch with other kernels, so
// they agree closely but need not be bitwise; a step at the wrong position (RoPE) or reading
// the wrong cache would not agree at all.
TEST(Capture, DecodeStepsMatchTheSameTokensInAPrompt) {
  HD_REQUIRE_SHARED();
  auto model = hd::engine::model_load(hd::test::shared_path("models/stories260K.gguf"));
  hd::engine::ArmSettings s;
  s.model = model->info().path;
  s.n_threads = 1;
  std::vector<int32_t> prompt = model->tokenize("Once upon a time, there was a little girl", true);
  const int n = static_cast<int>(prompt.size()), steps = 4;
  const auto stepped = hd::run::capture_taps(model, s, prompt, steps);
  ASSERT_EQ(stepped.continuation.size(), static_cast<size_t>(steps));
  // Forward order: each tap, then the same tap at every step.
  ASSERT_EQ(stepped.tensors.size(), (1 + 5 * 4 + 1) * static_cast<size_t>(1 + steps));
  EXPECT_EQ(stepped.tensors[0].name, "inp_embd");
  EXPECT_EQ(stepped.tensors[1].name, "inp_embd@token_0");
  EXPECT_EQ(stepped.tensors[steps + 1].name, "kqv_out-0");

  // The same tokens fed again give the same steps, bit for bit.
  const auto fed = hd::run::capture_taps(model, s, prompt, steps, stepped.continuation);
  for (size_t i = 0; i < fed.tensors.size(); ++i) EXPECT_EQ(fed.tensors[i].data, stepped.tensors[i].data);

  std::vector<int32_t> whole = prompt;
  whole.insert(whole.end(), stepped.continuation.begin(), stepped.continuation.end() - 1);
  const auto batch = hd::run::capture_taps(model, s, whole, 0);
  std::map<std::string, const hd::store::NamedTensor*> by_name;
  for (const auto& t : batch.tensors) by_name[t.name] = &t;
  for (const auto& t : stepped.tensors) {
    const size_t at = t.name.find("@token_");
    if (at == std::string::npos) continue;
    const int step = std::stoi(t.name.substr(at + 7));
    if (step == steps - 1) continue;  // its token is the last one: not in `whole`'s prompt
    const auto& rows = by_name.at(t.name.substr(0, at))->data;
    const size_t w = t.data.size(), row = static_cast<size_t>(n + step);
    double worst = 0, scale = 0;
    for (size_t k = 0; k < w; ++k) {
      worst = std::max(worst, static_cast<double>(std::fabs(t.data[k] - rows[row * w + k])));
      scale = std::max(scale, static_cast<double>(std::fabs(rows[row * w + k])));
    }
    EXPECT_LE(worst, 1e-2 * scale) << t.name;  // measured: up to 1.03e-3
  }
  // ...and the comparison can fail: the row before (another token, another position) is far.
  const auto& step0 = stepped.tensors[(1 + 5 * 4) * (1 + steps) - steps].data;  // l_out-4@token_0
  const auto& rows = by_name.at("l_out-4")->data;
  const size_t w = step0.size();
  double off = 0;
  for (size_t k = 0; k < w; ++k)
    off = std::max(off, static_cast<double>(std::fabs(step0[k] - rows[(n - 1) * w + k])));
  EXPECT_GT(off, 0.1);
  EXPECT_EQ(stepped.tensors[(1 + 5 * 4) * (1 + steps) - steps].name, "l_out-4@token_0");
}
