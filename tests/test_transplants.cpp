// Transplants and components against known answers (docs/transplants.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "analysis/compare.h"
#include "analysis/transplant_summary.h"
#include "engine/model_maker.h"
#include "engine/quantize.h"
#include "run/session.h"
#include "test_support.h"

using namespace hd;

namespace {

engine::ArmSettings arm(const std::string& model) {
  engine::ArmSettings s;
  s.model = model;
  s.n_threads = 2;
  return s;
}

run::DiffConfig components_config(const engine::ArmSettings& a, const engine::ArmSettings& b,
                                  int chunk) {
  run::DiffConfig c;
  c.a = a;
  c.b = b;
  c.chunk = chunk;
  c.floor = false;
  c.transplants = c.components = true;
  return c;
}

std::vector<analysis::ChunkResult> run_chunks(run::DiffConfig c, int n_chunks) {
  run::Session s(std::move(c));
  auto chunks = s.chunks_of(
      run::read_text_file(test::shared_path("corpora/tom-sawyer.txt")).substr(0, 20000));
  std::vector<analysis::ChunkResult> out;
  for (int i = 0; i < n_chunks; ++i) out.push_back(s.compute(i, chunks[static_cast<size_t>(i)]));
  return out;
}

// D(k) or N(k) of one position, "none" first.
std::vector<double> series(const analysis::ChunkResult& c, int pos, bool denoise) {
  const auto t = analysis::position_trace(c, pos);
  return denoise ? t->denoise : t->noise;
}

bool same_bits(double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; }

const std::string& model(const std::string& preset) {
  static std::map<std::string, std::string> made;
  auto& path = made[preset];
  if (path.empty()) {
    path = test::temp_dir("transplant-" + preset) + "/m.gguf";
    engine::make_model({preset, 1, "f16"}, path);
  }
  return path;
}

}  // namespace

TEST(Transplants, IdenticalArmsGiveExactlyZeroEverywhere) {
  HD_REQUIRE_SHARED();
  const std::string m = test::shared_path("models/stories260K.gguf");
  const auto chunks = run_chunks(components_config(arm(m), arm(m), 32), 2);
  for (const auto& c : chunks) {
    ASSERT_TRUE(c.transplants);
    EXPECT_EQ(c.transplants->points.size(), 1u + 2u * 5u);
    EXPECT_EQ(c.transplants->denoise.size(), 11u * 31u);
    for (const auto* rows : {&c.transplants->denoise, &c.transplants->noise}) {
      for (const auto& r : *rows) EXPECT_EQ(r.kl, 0.0) << r.step << ":" << r.pos;
    }
  }
  const auto s = analysis::summarize_transplants(chunks);
  ASSERT_TRUE(s && s->has_components);
  for (const auto* d : {&s->denoise_components, &s->noise_components}) {
    EXPECT_EQ(d->untouched, 0.0);
    EXPECT_EQ(d->final, 0.0);
    EXPECT_EQ(d->embedding.mean, 0.0);
    for (const auto& l : d->layers) {
      EXPECT_EQ(l.attention.mean, 0.0);
      EXPECT_EQ(l.mlp.mean, 0.0);
    }
  }
  for (const auto& p : s->denoise) EXPECT_EQ(p.kl.mean, 0.0);
}

// Arms that differ only in the K cache: the embedding and every MLP compute the same function
// of the same input in both arms, so restoring before or after them changes nothing, bit for
// bit; attention reads the quantized keys, so its steps carry everything.
class KCacheOnly : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(KCacheOnly, MlpAndEmbeddingStepsAreExactlyZero) {
  HD_REQUIRE_SHARED();
  const auto [preset, fa] = GetParam();
  auto a = arm(model(preset));
  a.flash_attn = fa;
  auto b = a;
  b.cache_type_k = "q8_0";
  const auto chunks = run_chunks(components_config(a, b, 32), 1);
  const auto& c = chunks[0];
  const auto& pts = c.transplants->points;
  bool attention_moves = false;
  for (int pos = 0; pos < 31; ++pos) {
    for (const bool denoise : {true, false}) {
      const auto v = series(c, pos, denoise);
      EXPECT_TRUE(same_bits(v[0], v[1])) << "embedding step at " << pos;
      for (size_t k = 2; k + 1 < v.size(); k += 2) {
        EXPECT_EQ(pts[k - 1].rfind("ffn_inp-", 0), 0u);  // heterodyne's label, whatever the graph's
        EXPECT_TRUE(same_bits(v[k], v[k + 1]))
            << pts[k] << " MLP step at " << pos << ": " << v[k] << " vs " << v[k + 1];
        attention_moves = attention_moves || !same_bits(v[k - 1], v[k]);
      }
    }
  }
  EXPECT_TRUE(attention_moves) << "a q8_0 K cache should move some attention step";
  const auto s = analysis::summarize_transplants(chunks);
  for (const auto& l : s->denoise_components.layers) EXPECT_EQ(l.mlp.mean, 0.0);
  EXPECT_EQ(s->denoise_components.embedding.mean, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Models, KCacheOnly,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen3"),
                                            ::testing::Values("on", "off")));
// Gemma 3's sliding-window layers and post-norms, and 8 experts with 2 routed per token: the
// same known answer through points the survey found (sa_out-N is Gemma's mid-layer point).
INSTANTIATE_TEST_SUITE_P(Presets, KCacheOnly,
                         ::testing::Values(std::tuple{"tiny-gemma3", "on"},
                                           std::tuple{"tiny-gemma3", "off"},
                                           std::tuple{"tiny-qwen3moe", "on"}));

TEST(Transplants, StepsTelescope) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("telescope");
  const std::string m = test::shared_path("models/stories260K.gguf");
  engine::quantize_model(m, dir + "/q4_0.gguf", "Q4_0", 2);
  const auto chunks = run_chunks(components_config(arm(m), arm(dir + "/q4_0.gguf"), 64), 3);
  const auto s = analysis::summarize_transplants(chunks);
  ASSERT_TRUE(s && s->has_components);
  test::expect_steps_telescope(*s);
  EXPECT_GT(s->denoise_components.untouched - s->denoise_components.final, 0.0);
  EXPECT_GT(s->noise_components.final - s->noise_components.untouched, 0.0);
  // Curves: denoise falls from KL(A||B) towards the head's own share; noise starts at 0.
  EXPECT_EQ(s->denoise.front().point, "none");
  EXPECT_EQ(s->denoise[1].point, "inp_embd");
  EXPECT_EQ(s->noise.front().kl.mean, 0.0);
  EXPECT_LT(s->denoise.back().kl.mean, s->denoise.front().kl.mean);
}

TEST(Transplants, DenoiseAtTheLastLayerIsZeroWhenTheHeadIsShared) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("shared-head");
  const std::string m = test::shared_path("models/stories260K.gguf");
  engine::quantize_model(m, dir + "/q4_0-keep-output.gguf", "Q4_0", 2, /*keep_output=*/true);
  run::DiffConfig c = components_config(arm(m), arm(dir + "/q4_0-keep-output.gguf"), 32);
  c.components = false;  // l_out-N only
  const auto chunks = run_chunks(c, 2);
  for (const auto& chunk : chunks) {
    const auto& t = *chunk.transplants;
    ASSERT_EQ(t.points.back(), "l_out-4");
    const int last = static_cast<int>(t.points.size());
    int seen = 0;
    for (const auto& r : t.denoise) {
      if (r.step != last) continue;
      EXPECT_EQ(r.kl, 0.0) << r.pos;
      ++seen;
    }
    EXPECT_EQ(seen, 31);
    EXPECT_GT(chunk.diff.positions[5].score.kl, 0.0);  // the arms do differ
  }
}

TEST(Transplants, StoredShownAndVerified) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("transplant-cli");
  const std::string path = dir + "/run.hdy";
  auto r = test::run_cli({"diff", "--a", test::shared_path("models/stories260K.gguf"), "--b-quant",
                          "Q4_0", "--text-file", test::shared_path("corpora/tom-sawyer.txt"),
                          "--chunk", "32", "--max-chunks", "3", "--components", "-o", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_cli({"show", path, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("transplants") && j.contains("components"));
  const auto& den = j["transplants"]["denoise"];
  ASSERT_EQ(den.size(), 7u);  // none, inp_embd, l_out-0..4
  EXPECT_EQ(den[0]["point"], "none");
  EXPECT_EQ(den[1]["point"], "inp_embd");
  EXPECT_EQ(den[6]["point"], "l_out-4");
  EXPECT_EQ(den[0]["kl_mean"], j["kl_mean"]);  // D(none) is the diff's KL
  EXPECT_EQ(den[2]["kl_ci95"].size(), 2u);     // [lo, hi]
  EXPECT_LE(den[2]["kl_ci95"][0].get<double>(), den[2]["kl_mean"].get<double>());
  const auto& c = j["components"]["noise"];
  for (const char* key : {"untouched", "final", "embedding", "layers", "attention_total",
                          "mlp_total", "paired_diff", "paired_diff_ci95"}) {
    EXPECT_TRUE(c.contains(key)) << key;
  }
  EXPECT_EQ(c["untouched"], 0.0);
  ASSERT_EQ(c["layers"].size(), 5u);
  EXPECT_TRUE(c["layers"][0].contains("attention_ci95") && c["layers"][0].contains("mlp_ci95"));

  r = test::run_cli({"show", path, "--transplants", "--components", "--position", "1:20"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("attention − MLP (paired)"), std::string::npos);
  EXPECT_NE(r.out.find("\n  1:20  KL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("after each restore point"), std::string::npos) << r.out;
  r = test::run_cli({"show", path, "--position", "9:20"});
  EXPECT_EQ(r.exit_code, 2);
  r = test::run_cli({"verify", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Prefix reuse must give the numbers one full pass per patch gives, bit for bit, on every model
// and setting the tests use; and it must actually be used (a verified tail) for that to mean
// anything.
struct ReuseCase {
  std::string name, model_a, model_b_quant, cache_k, fa, score_from;
  int ubatch;
};

class PrefixReuse : public ::testing::TestWithParam<ReuseCase> {};

TEST_P(PrefixReuse, BitwiseIdenticalToFullPasses) {
  HD_REQUIRE_SHARED();
  const ReuseCase& rc = GetParam();
  const std::string a_path = rc.model_a == "stories260K"
                                 ? test::shared_path("models/stories260K.gguf")
                                 : model(rc.model_a);
  auto a = arm(a_path);
  a.n_ubatch = rc.ubatch;
  a.flash_attn = rc.fa;
  auto b = a;
  if (!rc.model_b_quant.empty()) b.model = engine::ensure_quantized(a_path, rc.model_b_quant, 2);
  if (!rc.cache_k.empty()) b.cache_type_k = rc.cache_k;
  auto with = components_config(a, b, 32);
  with.score_from = rc.score_from;
  auto without = with;
  without.prefix_reuse = false;
  run::Session fast(with), slow(without);
  const auto chunks = fast.chunks_of(
      run::read_text_file(test::shared_path("corpora/tom-sawyer.txt")).substr(0, 8000));
  for (int i = 0; i < 2; ++i) {
    const auto x = fast.compute(i, chunks[static_cast<size_t>(i)]);
    const auto y = slow.compute(i, chunks[static_cast<size_t>(i)]);
    const auto m = analysis::first_mismatch(y, x);
    EXPECT_FALSE(m.has_value()) << rc.name << ": " << *m;
  }
  const auto report = fast.prefix_reuse_report();
  EXPECT_TRUE(report["enabled"].get<bool>());
  EXPECT_FALSE(report["a"]["verified"].empty()) << report.dump();
  EXPECT_FALSE(report["b"]["verified"].empty()) << report.dump();
  std::printf("[ prefix reuse %s ] %s\n", rc.name.c_str(), report.dump().c_str());
}

INSTANTIATE_TEST_SUITE_P(
    Models, PrefixReuse,
    ::testing::Values(
        ReuseCase{"stories260K_vs_Q4_0", "stories260K", "Q4_0", "", "auto", "1", 512},
        ReuseCase{"stories260K_ub7_half", "stories260K", "Q8_0", "", "auto", "half", 7},
        ReuseCase{"tiny_llama_vs_Q4_K_M", "tiny-llama", "Q4_K_M", "", "auto", "1", 512},
        ReuseCase{"tiny_llama_q8_0_K_fa_off", "tiny-llama", "", "q8_0", "off", "1", 512},
        ReuseCase{"tiny_qwen3_q8_0_K_fa_on_half", "tiny-qwen3", "", "q8_0", "on", "half", 512}),
    [](const auto& info) { return info.param.name; });
