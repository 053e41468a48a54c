// The default diff holds one llama.cpp context at a time (run/session_lean.cpp): A, A′ compared
// piece by piece with a copy of A's logits, A's context freed, B compared with that copy and
// A's rows as llama.cpp computes them, B′ against B. Known answer: the two-context order
// (--two-contexts, the order every run with analyses keeps) computes the same passes, so every
// stored number of the diff and of both floors is the same bits, at every position and layer,
// on a quantized model whose CPU kernels are repacked, with flash attention, at both of the
// floor's splits, scored from the first position and from the middle.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/quantize.h"
#include "run/session.h"
#include "run/text.h"
#include "test_support.h"

using namespace hd;

namespace {

// Bits, not values: a KL of -0.0 against 0.0 would be a different computation.
template <class T>
bool same_bits(const T& x, const T& y) {
  return std::memcmp(&x, &y, sizeof x) == 0;
}

void expect_same(const analysis::Comparison& lean, const analysis::Comparison& two,
                 const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(lean.positions.size(), two.positions.size());
  for (size_t i = 0; i < two.positions.size(); ++i) {
    const auto& x = lean.positions[i];
    const auto& y = two.positions[i];
    ASSERT_EQ(x.pos, y.pos);
    EXPECT_EQ(x.target, y.target);
    EXPECT_EQ(x.scored, y.scored);
    EXPECT_TRUE(same_bits(x.score.kl, y.score.kl)) << "pos " << x.pos;
    EXPECT_TRUE(same_bits(x.score.nll_a, y.score.nll_a)) << "pos " << x.pos;
    EXPECT_TRUE(same_bits(x.score.nll_b, y.score.nll_b)) << "pos " << x.pos;
    EXPECT_EQ(x.score.top_a.id, y.score.top_a.id) << "pos " << x.pos;
    EXPECT_EQ(x.score.top_b.id, y.score.top_b.id) << "pos " << x.pos;
    EXPECT_EQ(x.score.top_a.p, y.score.top_a.p) << "pos " << x.pos;
    EXPECT_EQ(x.score.top_b.p, y.score.top_b.p) << "pos " << x.pos;
  }
  ASSERT_EQ(lean.layers.size(), two.layers.size());
  for (size_t i = 0; i < two.layers.size(); ++i) {
    const auto& x = lean.layers[i];
    const auto& y = two.layers[i];
    ASSERT_EQ(x.layer, y.layer);
    ASSERT_EQ(x.pos, y.pos);
    EXPECT_TRUE(same_bits(x.diff, y.diff)) << "layer " << x.layer << " pos " << x.pos;
  }
}

}  // namespace

TEST(LeanPass, IsTheTwoContextOrderBitForBit) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("lean-pass");
  const std::string a = test::shared_path("models/TinyStories-656K.f16.gguf");
  const std::string b = dir + "/q4km.gguf";
  engine::quantize_model(a, b, "Q4_K_M", 2);
  const std::string text =
      run::read_text_file(test::shared_path("corpora/tom-sawyer.656k-safe.txt")).substr(0, 6000);
  for (const std::string score_from : {"1", "half"}) {
    run::DiffConfig c;
    c.a.model = a;
    c.b.model = b;
    c.a.n_threads = c.b.n_threads = 2;
    c.a.flash_attn = c.b.flash_attn = "on";
    c.chunk = 64;
    c.score_from = score_from;
    run::Session lean(c);
    c.two_contexts = true;
    run::Session two(c);
    const auto chunks = lean.chunks_of(text);
    ASSERT_GE(chunks.size(), 3u);
    bool floor_moves = false, diff_moves = false;
    for (int i = 0; i < 3; ++i) {  // chunks 0 and 1 at the floor's two splits; 2 without it
      if (i == 2) {
        lean.measure_floor_on({0, 1});
        two.measure_floor_on({0, 1});
      }
      const auto x = lean.compute(i, chunks[static_cast<size_t>(i)]);
      const auto y = two.compute(i, chunks[static_cast<size_t>(i)]);
      const std::string at = "score from " + score_from + ", chunk " + std::to_string(i);
      expect_same(x.diff, y.diff, at + ": the diff");
      ASSERT_EQ(x.floor.has_value(), y.floor.has_value()) << at;
      ASSERT_EQ(x.floor.has_value(), i < 2) << at;
      if (x.floor) expect_same(*x.floor, *y.floor, at + ": A's floor");
      ASSERT_EQ(x.floor_b.has_value(), y.floor_b.has_value()) << at;
      if (x.floor_b) expect_same(*x.floor_b, *y.floor_b, at + ": B's floor");
      // Not vacuous: the quantization moves the logits and the split moves B's.
      for (const auto& p : x.diff.positions) diff_moves |= p.score.kl > 0;
      if (x.floor_b) {
        for (const auto& p : x.floor_b->positions) floor_moves |= p.score.kl > 0;
      }
      EXPECT_FALSE(x.diff.layers.empty()) << at;
    }
    EXPECT_TRUE(diff_moves);
    EXPECT_TRUE(floor_moves);
    // Not the two-context order compared with itself.
    EXPECT_EQ(lean.lean_chunks(), 3);
    EXPECT_EQ(two.lean_chunks(), 0);
  }
}
