// The hook and the arms on a real model: exact zeros, row accounting, overwrites that land.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "engine/arm.h"
#include "engine/mapped_pages.h"
#include "engine/model_maker.h"
#include "engine/points.h"
#include "engine/quantize.h"
#include "engine/system.h"
#include "errors.h"
#include "run/session.h"
#include "test_support.h"

using namespace hd;

namespace {

std::vector<int32_t> first_chunk(const engine::Model& m, int n) {
  auto t = m.tokenize(
      run::read_text_file(test::shared_path("corpora/tom-sawyer.txt")).substr(0, 4000), true);
  t.resize(static_cast<size_t>(n));
  return t;
}

engine::ArmSettings settings_for(const std::string& model, int ubatch = 512) {
  engine::ArmSettings s;
  s.model = model;
  s.n_ubatch = ubatch;
  s.n_threads = 2;
  return s;
}

}  // namespace

TEST(Engine, IdenticalArmsGiveExactlyZeroEverywhere) {
  HD_REQUIRE_SHARED();
  run::DiffConfig c;
  c.a = c.b = settings_for(test::shared_path("models/stories260K.gguf"));
  c.chunk = 64;
  run::Session s(c);
  const auto chunks =
      s.chunks_of(run::read_text_file(test::shared_path("corpora/tom-sawyer.txt")).substr(0, 2000));
  ASSERT_GE(chunks.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const auto r = s.compute(i, chunks[static_cast<size_t>(i)]);
    ASSERT_EQ(r.diff.positions.size(), 63u);
    for (const auto& p : r.diff.positions) {
      EXPECT_EQ(p.score.kl, 0.0);
      EXPECT_EQ(p.score.nll_a, p.score.nll_b);
      EXPECT_EQ(p.score.top_a.id, p.score.top_b.id);
    }
    ASSERT_EQ(r.diff.layers.size(), 5u * 64u);
    for (const auto& l : r.diff.layers) {
      EXPECT_EQ(l.diff.rel_err, 0.0);
      EXPECT_EQ(l.diff.max_abs, 0.0);
      EXPECT_EQ(l.diff.cosine, 1.0);
    }
  }
}

TEST(Engine, RowsAreCountedAcrossUbatches) {
  HD_REQUIRE_SHARED();
  auto m = engine::model_load(test::shared_path("models/stories260K.gguf"));
  engine::Arm arm(m, settings_for(m->info().path, 7), 64);  // 64 = 9 ubatches of 7 + 1
  engine::Hook hook;
  hook.capture("embd");  // the embedding point, produced at this commit under that name
  hook.capture("l_out-0");
  hook.capture("l_out-4");
  std::vector<float> logits;
  arm.run_chunk(first_chunk(*m, 64), &hook, logits);
  EXPECT_EQ(hook.captured("embd").size(), 64u * 64u);
  EXPECT_EQ(hook.captured("l_out-0").size(), 64u * 64u);
  EXPECT_EQ(hook.captured("l_out-4").size(), 64u * 64u);
  EXPECT_EQ(logits.size(), 64u * 512u);
}

TEST(Engine, ANameNeverProducedIsAnError) {
  HD_REQUIRE_SHARED();
  auto m = engine::model_load(test::shared_path("models/stories260K.gguf"));
  engine::Arm arm(m, settings_for(m->info().path), 32);
  engine::Hook hook;
  hook.capture("l_out-5");  // the model has layers 0..4
  std::vector<float> logits;
  try {
    arm.run_chunk(first_chunk(*m, 32), &hook, logits);
    FAIL() << "a missing point was accepted";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("'l_out-5' was never produced"), std::string::npos)
        << e.what();
  }
}

TEST(Engine, OverwritesChangeWhatDownstreamSees) {
  HD_REQUIRE_SHARED();
  auto m = engine::model_load(test::shared_path("models/stories260K.gguf"));
  engine::Arm arm(m, settings_for(m->info().path, 5), 16);
  const auto tokens = first_chunk(*m, 16);
  engine::Hook cap;
  cap.capture("l_out-2");
  std::vector<float> base, same, changed;
  arm.run_chunk(tokens, &cap, base);
  const std::vector<float> l2 = cap.captured("l_out-2");

  // Writing back exactly what was there changes nothing, bit for bit.
  engine::Hook put_same;
  put_same.overwrite("l_out-2", 0, l2);
  arm.run_chunk(tokens, &put_same, same);
  EXPECT_EQ(std::memcmp(base.data(), same.data(), base.size() * sizeof(float)), 0);

  // Zeroing rows 3..5 (crossing a ubatch boundary at 5) changes position 3 on, not 0..2.
  engine::Hook put_zero;
  put_zero.overwrite("l_out-2", 3, std::vector<float>(3 * 64, 0.0f));
  arm.run_chunk(tokens, &put_zero, changed);
  const size_t v = 512;
  EXPECT_EQ(std::memcmp(base.data(), changed.data(), 3 * v * sizeof(float)), 0);
  for (size_t p = 3; p < 6; ++p) {
    EXPECT_NE(std::memcmp(base.data() + p * v, changed.data() + p * v, v * sizeof(float)), 0) << p;
  }
}

TEST(Engine, FewerLogitsKeepOnlyOutputRowsInTheLastLayer) {
  HD_REQUIRE_SHARED();
  auto m = engine::model_load(test::shared_path("models/stories260K.gguf"));
  engine::Arm arm(m, settings_for(m->info().path, 7), 32);
  const auto tokens = first_chunk(*m, 32);
  engine::Hook all, part;
  for (auto* h : {&all, &part}) {
    h->capture("l_out-0");
    h->capture("l_out-4");
  }
  std::vector<float> full, tail;
  arm.run_chunk(tokens, &all, full);
  arm.run_chunk(tokens, &part, tail, 20);
  EXPECT_EQ(tail.size(), 12u * 512u);
  EXPECT_EQ(part.first_row("l_out-0"), 0);
  EXPECT_EQ(part.captured("l_out-0").size(), 32u * 64u);
  EXPECT_EQ(part.first_row("l_out-4"), 20);
  ASSERT_EQ(part.captured("l_out-4").size(), 12u * 64u);
  // The same rows as the full pass: only where they sit in the buffer differs.
  for (size_t i = 0; i < 12u * 64u; ++i) {
    ASSERT_NEAR(part.captured("l_out-4")[i], all.captured("l_out-4")[20 * 64 + i], 1e-4) << i;
  }
  for (size_t i = 0; i < 12u * 512u; ++i) ASSERT_NEAR(tail[i], full[20 * 512 + i], 1e-3) << i;

  // An overwrite names batch positions, also on a point that keeps output rows only.
  engine::Hook zero;
  zero.overwrite("l_out-4", 25, std::vector<float>(64, 0.0f));
  std::vector<float> patched;
  arm.run_chunk(tokens, &zero, patched, 20);
  EXPECT_EQ(std::memcmp(patched.data(), tail.data(), 5 * 512 * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(patched.data() + 5 * 512, tail.data() + 5 * 512, 512 * sizeof(float)), 0);
}

TEST(Engine, Qwen3RunsWithAQuantizedKCache) {
  // tiny-qwen3: head dim 64, so a q8_0 K cache is allowed; the qwen3 names map end to end.
  const std::string dir = test::temp_dir("qwen3");
  const std::string model = dir + "/tiny-qwen3.gguf";
  engine::make_model({"tiny-qwen3", 1, "f16"}, model);
  run::DiffConfig c;
  c.a = settings_for(model);
  c.b = settings_for(model);
  c.b.cache_type_k = "q8_0";
  c.chunk = 32;
  run::Session s(c);
  std::vector<int32_t> tokens(32);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(100 + 37 * i);
  const auto r = s.compute(0, tokens);
  ASSERT_EQ(r.diff.positions.size(), 31u);
  ASSERT_EQ(r.diff.layers.size(), 4u * 32u);
  double kl = 0;
  for (const auto& p : r.diff.positions) {
    EXPECT_GE(p.score.kl, -1e-12);
    kl += p.score.kl;
  }
  EXPECT_GT(kl, 0.0);  // a quantized K cache moves the numbers, a little
  EXPECT_LT(kl / 31, 1e-2);
  // Layer 0's residual moves only through attention over the quantized keys: nonzero, small.
  EXPECT_GT(r.diff.layers[5].diff.rel_err, 0.0);
}

TEST(Engine, ArmsOfDifferentShapesAreRefused) {
  // Same vocabulary, fewer layers: tiny-llama without its first layer. Residuals pair layers and rows, so
  // such arms cannot be compared and must be refused, naming both shapes.
  const std::string dir = test::temp_dir("shapes");
  const std::string model = dir + "/tiny-llama.gguf";
  engine::make_model({"tiny-llama", 1, "f16"}, model);
  run::DiffConfig c;
  c.a = settings_for(model);
  engine::write_without_first_layers(model, dir + "/tail.gguf", 1);
  c.b = settings_for(dir + "/tail.gguf");
  c.chunk = 32;
  try {
    run::Session s(c);
    FAIL() << "arms of different shapes were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("4 layers × 256, B is llama 3 layers × 256"),
              std::string::npos)
        << e.what();
  }
}

TEST(Engine, AScoreFromThatLeavesNothingIsRefused) {
  run::DiffConfig c;
  c.chunk = 2;
  c.score_from = "half";
  EXPECT_THROW(run::validate(c), InputError);
  c.chunk = 4;
  EXPECT_NO_THROW(run::validate(c));
}

// llama.cpp copies the tensors it repacks for the CPU out of the file's mapping: those pages are
// not kept resident beside the copy (peak RSS stays near the files' size), and a pass still
// reads what it needs from the mapping. Q4_0 is repacked where llama.cpp was built with AVX2
// (repack.cpp); a build without it copies nothing, and then the pages stay.
TEST(Engine, ALoadedModelKeepsNoResidentCopyOfItsMapping) {
  HD_REQUIRE_SHARED();
  const std::string q = engine::ensure_quantized(test::shared_path("models/stories260K.gguf"),
                                                 "Q4_0", 2);
  const auto model = engine::model_load(q);
  const size_t copies_before = engine::weight_copy_buffers_logged();
  engine::Arm arm(model, settings_for(q), 64);
  if (engine::weight_copy_buffers_logged() != copies_before) {
    EXPECT_LT(engine::mapped_resident_bytes(q), std::filesystem::file_size(q) / 4);
  } else {
    EXPECT_GT(engine::mapped_resident_bytes(q), std::filesystem::file_size(q) / 2);
  }
  std::vector<float> logits, again;
  const auto tokens = first_chunk(*model, 64);
  arm.run_chunk(tokens, nullptr, logits);
  engine::release_mapped_pages(q);  // what the pass read comes back from the page cache
  arm.run_chunk(tokens, nullptr, again);
  EXPECT_EQ(std::memcmp(logits.data(), again.data(), logits.size() * sizeof(float)), 0);
}

// Nothing of an f32 file is repacked: its pages are the weights a pass reads, so they stay
// mapped rather than fault back in on the first pass.
TEST(Engine, AModelWithNothingCopiedOutKeepsItsMappingResident) {
  HD_REQUIRE_SHARED();
  const std::string f = test::shared_path("models/stories260K.gguf");
  const auto model = engine::model_load(f);
  engine::Arm arm(model, settings_for(f), 64);
  EXPECT_GT(engine::mapped_resident_bytes(f), std::filesystem::file_size(f) / 2);
}

// Its pages are out of memory while a file that copies tensors out loads (that load's peak), and
// resident again after it.
TEST(Engine, AKeptMappingIsResidentAgainAfterAnotherFileLoads) {
  HD_REQUIRE_SHARED();
  const std::string f = test::shared_path("models/stories260K.gguf");
  const std::string q = engine::ensure_quantized(f, "Q8_0", 2);
  const auto model = engine::model_load(f);
  engine::Arm arm(model, settings_for(f), 64);
  ASSERT_GT(engine::mapped_resident_bytes(f), std::filesystem::file_size(f) / 2);
  engine::release_mapped_pages(f);
  ASSERT_LT(engine::mapped_resident_bytes(f), std::filesystem::file_size(f) / 4);
  engine::Arm other(engine::model_load(q), settings_for(q), 64);  // parks f, then populates it
  EXPECT_GT(engine::mapped_resident_bytes(f), std::filesystem::file_size(f) / 2);
}
