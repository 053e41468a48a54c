// The floor's split pass runs in the arm's own context (Arm::run_split: the chunk in pieces of
// the floor's ubatch, one llama_decode each) instead of a second context made at -ub of that
// size. Known answer: the two are the same computation, so every logit and every captured
// residual row is the same bits, on every architecture the fixture generator makes and on a
// quantized model whose CPU kernels are repacked (Q4_K_M) with flash attention on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "engine/arm.h"
#include "engine/fixtures.h"
#include "engine/point_survey.h"
#include "engine/quantize.h"
#include "errors.h"
#include "run/config.h"
#include "test_support.h"

using namespace hd;

namespace {

struct Pass {
  std::vector<float> logits;
  std::vector<std::vector<float>> residuals;  // by layer
};

engine::Hook capturing(const engine::PointMap& m) {
  engine::Hook h;
  engine::tell_rows(m, h);
  for (int l = 0; l < m.n_layer && m.residuals(); ++l) h.capture(m.name(engine::Role::kResidual, l));
  return h;
}

Pass collect(const engine::PointMap& m, engine::Hook& h, std::vector<float> logits) {
  Pass p{std::move(logits), {}};
  for (int l = 0; l < m.n_layer && m.residuals(); ++l) {
    p.residuals.push_back(h.captured(m.name(engine::Role::kResidual, l)));
  }
  return p;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

// The chunk through a context of -ub `ubatch` and through A's own context split in place.
// Returns whether the split changes the logits at all (an unsplit pass gives other bits).
bool expect_split_in_place_is_the_ubatch_split(const std::string& path, engine::ArmSettings s,
                                               const std::vector<int32_t>& tokens, int ubatch,
                                               int first_output) {
  SCOPED_TRACE(path + " at ubatch " + std::to_string(ubatch));
  auto model = engine::model_load(path);
  const engine::PointMap m = engine::survey_points(model);
  const int n = static_cast<int>(tokens.size());
  s.model = path;
  engine::Arm whole(model, s, n);
  if (!whole.splits_batches()) return false;  // no KV cache, no split (and no floor)
  EXPECT_TRUE(whole.splits_in_place(ubatch));
  engine::Hook h1 = capturing(m);
  std::vector<float> logits;
  whole.run_split(tokens, ubatch, &h1, logits, first_output);
  const Pass in_place = collect(m, h1, logits);
  engine::ArmSettings own = s;
  own.n_ubatch = ubatch;
  engine::Arm split(model, own, n);
  engine::Hook h2 = capturing(m);
  split.run_chunk(tokens, &h2, logits, first_output);
  const Pass context = collect(m, h2, logits);
  EXPECT_TRUE(same_bits(in_place.logits, context.logits));
  EXPECT_EQ(in_place.residuals.size(), context.residuals.size());
  for (size_t l = 0; l < std::min(context.residuals.size(), in_place.residuals.size()); ++l) {
    EXPECT_TRUE(same_bits(in_place.residuals[l], context.residuals[l])) << "layer " << l;
  }
  // The arm's own pass after a split in its context is the pass of an arm that never split:
  // diff runs the floor first and reads the arm's logits where llama.cpp wrote them.
  const std::span<const float> after = whole.run_chunk_view(tokens, nullptr, first_output);
  engine::Arm fresh(model, s, n);
  fresh.run_chunk(tokens, nullptr, logits, first_output);
  EXPECT_TRUE(same_bits(std::vector<float>(after.begin(), after.end()), logits));
  return !same_bits(logits, context.logits);
}

}  // namespace

TEST(SplitInPlace, IsTheUbatchSplitOnEveryFixture) {
  std::vector<int32_t> tokens(16);
  for (int i = 0; i < 16; ++i) tokens[static_cast<size_t>(i)] = (i * 29 + 5) % 128;
  engine::ArmSettings s;
  s.n_threads = 1;
  s.n_ubatch = 16;
  for (const engine::FixtureArch& a : engine::fixture_archs()) {
    for (const bool moe : {false, true}) {
      if (!(moe ? a.moe : a.dense)) continue;
      const std::string path = engine::ensure_fixture(a.name, moe, 1);
      // Both of the floor's splits of a 16-token chunk, every position's logits.
      for (const int ub : {run::floor_ubatch_for(16, 16), run::second_floor_ubatch(16, 16, 9)}) {
        expect_split_in_place_is_the_ubatch_split(path, s, tokens, ub, 0);
      }
    }
  }
}

TEST(SplitInPlace, IsTheUbatchSplitOfARepackedQuantWithFlashAttention) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("split-in-place");
  const std::string b = dir + "/q4km.gguf";
  engine::quantize_model(test::shared_path("models/TinyStories-656K.f16.gguf"), b, "Q4_K_M", 2);
  auto model = engine::model_load(b);
  std::vector<int32_t> tokens = model->tokenize("Once upon a time there was a little girl who "
                                                "liked to play in the park with her dog.", true);
  tokens.resize(64, tokens.back());
  engine::ArmSettings s;
  s.n_threads = 2;
  s.n_ubatch = 64;
  s.flash_attn = "on";
  bool split_changes_bits = false;
  for (const int ub : {run::floor_ubatch_for(64, 64), run::second_floor_ubatch(64, 64, 33)}) {
    split_changes_bits |= expect_split_in_place_is_the_ubatch_split(b, s, tokens, ub, 32);
  }
  // The known answer is not vacuous: here the split is noise (the floor is not 0), and the two
  // ways of splitting make the same noise.
  EXPECT_TRUE(split_changes_bits);
}

// A hook that fails in a split pass (rows of the wrong width written at a point) is what the
// pass reports: not the logits its graph left uncomputed, not llama_decode, not a later piece.
TEST(SplitInPlace, AHooksFailureIsWhatASplitPassReports) {
  HD_REQUIRE_SHARED();
  const std::string path = test::shared_path("models/stories260K.gguf");
  auto model = engine::model_load(path);
  const engine::PointMap m = engine::survey_points(model);
  ASSERT_TRUE(m.residuals());
  engine::ArmSettings s;
  s.model = path;
  s.n_threads = 1;
  s.n_ubatch = 32;
  engine::Arm arm(model, s, 32);
  std::vector<int32_t> tokens = model->tokenize("Once upon a time there was a cat.", true);
  tokens.resize(32, tokens.back());
  const std::string point = m.name(engine::Role::kResidual, 1);
  const std::vector<float> bad(7, 1.0f);  // no residual of this model is 7 wide
  for (const int split : {0, 11}) {
    engine::Hook h;
    engine::tell_rows(m, h);
    h.overwrite(point, 0, bad);
    std::vector<float> logits;
    try {
      if (split > 0) {
        arm.run_split(tokens, split, &h, logits);
      } else {
        arm.run_chunk(tokens, &h, logits);
      }
      ADD_FAILURE() << "a pass with rows of the wrong width ran (split " << split << ")";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("the rows written at graph point '" + point + "'"),
                std::string::npos)
          << "split " << split << ": " << e.what();
    }
    // The arm is whole after it: the next pass is the pass of an arm that never failed.
    const std::span<const float> next = arm.run_chunk_view(tokens, nullptr);
    engine::Arm fresh(model, s, 32);
    fresh.run_chunk(tokens, nullptr, logits);
    EXPECT_TRUE(same_bits(std::vector<float>(next.begin(), next.end()), logits)) << split;
  }
}
