// The demo model: the vocabulary learner, llama.cpp's tokenizer round trip through it, training
// (loss falls, runs are bitwise reproducible), the cache, and the quantization ladder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "build_info.h"
#include "common/sha256.h"
#include "demo/corpus.h"
#include "demo/demo_model.h"
#include "demo/vocabulary.h"
#include "engine/model.h"
#include "engine/model_maker.h"
#include "errors.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace hd;

namespace {

// A small corpus of real text: llama.cpp's own docs, copied so a test may change it.
std::string copy_docs(const std::string& name) {
  const fs::path dir = hd::test::temp_dir(name);
  fs::copy(fs::path(hd::build::kLlamaSource) / "docs", dir, fs::copy_options::recursive);
  return dir.string();
}

// Few, short steps: enough to see the loss fall, fast enough for a unit test.
demo::DemoSettings tiny_settings(const std::string& corpus) {
  demo::DemoSettings s;
  s.corpus_roots = {corpus};
  s.steps = 40;
  s.vocab_size = 512;
  s.lr = 1e-3f;
  s.n_threads = 2;
  s.eval_windows = 4;
  s.continuation_tokens = 4;
  return s;
}

void quiet(const std::string&) {}

}  // namespace

TEST(DemoVocabulary, MergesFollowFrequencyAndScoreByRank) {
  const std::string text = "low lower lowest low low newer newest new new\n";
  demo::VocabularySettings vs;
  vs.size = 3 + 256 + 40;
  vs.min_char_count = 1;
  const demo::Vocabulary v = demo::learn_vocabulary(text, vs);
  ASSERT_EQ(v.tokens.size(), v.scores.size());
  ASSERT_EQ(v.tokens.size(), v.types.size());
  EXPECT_LE(v.tokens.size(), static_cast<size_t>(vs.size));
  EXPECT_EQ(v.tokens[0], "<unk>");
  EXPECT_EQ(v.tokens[1], "<s>");
  EXPECT_EQ(v.tokens[3], "<0x00>");
  EXPECT_EQ(v.tokens[3 + 0x41], "<0x41>");
  EXPECT_EQ(v.types[3 + 0x41], demo::kByte);
  // The most frequent pair is "lo" (x5, tied with "ow"; "lo" < "ow"), so it is the first merge
  // and scores highest among merges.
  int first_merge = -1;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.types[i] == demo::kNormal && v.tokens[i].size() > 1 &&
        v.tokens[i] != std::string(demo::kSpaceMarker)) {
      first_merge = static_cast<int>(i);
      break;
    }
  }
  ASSERT_GE(first_merge, 0);
  EXPECT_EQ(v.tokens[first_merge], "lo");
  for (size_t i = static_cast<size_t>(first_merge) + 1; i < v.tokens.size(); ++i) {
    EXPECT_LT(v.scores[i], v.scores[i - 1]) << v.tokens[i];
  }
  // Spaces belong to the word after them.
  bool has_space_word = false;
  for (const auto& t : v.tokens) has_space_word |= t == std::string(demo::kSpaceMarker) + "low";
  EXPECT_TRUE(has_space_word);
  // Deterministic.
  EXPECT_EQ(demo::learn_vocabulary(text, vs).tokens, v.tokens);
}

TEST(DemoVocabulary, RefusesASizeWithNoRoomForMerges) {
  demo::VocabularySettings vs;
  vs.size = 100;
  EXPECT_THROW(demo::learn_vocabulary("abc", vs), InputError);
}

TEST(DemoTokenizer, LlamaCppRoundTripsTheCorpusByteForByte) {
  demo::CorpusSettings cs;
  cs.roots = demo::default_corpus_roots();
  cs.max_train_bytes = 400 * 1024;
  cs.max_held_out_bytes = 64 * 1024;
  const demo::Corpus corpus = demo::gather_corpus(cs);
  demo::VocabularySettings vs;
  const demo::Vocabulary vocab = demo::learn_vocabulary(corpus.train, vs);
  ASSERT_EQ(vocab.tokens.size(), 1024u);

  const std::string path = hd::test::temp_dir("demo-tokenizer") + "/init.gguf";
  engine::ModelSpec spec;
  spec.preset = "demo-llama";
  spec.vocabulary = &vocab;
  engine::make_model(spec, path);
  const auto model = engine::model_load(path);
  EXPECT_FALSE(model->info().add_bos);

  const std::string tricky =
      "<s> </s> <0x41> <unk> \t\r\n  two  spaces, ünïcödé 日本語 🦙 \x01 end without "
      "newline";
  for (const std::string* text : {&corpus.train, &corpus.held_out, &tricky}) {
    const std::vector<int32_t> tokens = model->tokenize(*text, false);
    EXPECT_EQ(model->detokenize(tokens), *text);
    std::string pieces;
    for (int32_t t : tokens) {
      EXPECT_NE(t, vocab.unk);
      EXPECT_NE(t, vocab.bos);  // "<s>" in the text is text, not the control token
      pieces += model->token_text(t);
    }
    EXPECT_EQ(pieces, *text);
  }
  // The learned pieces are used: well under one token per byte on code.
  const auto held = model->tokenize(corpus.held_out, false);
  EXPECT_LT(static_cast<double>(held.size()), 0.6 * static_cast<double>(corpus.held_out.size()));
}

TEST(DemoCorpus, HeldOutFilesAreNotTrainedOn) {
  demo::CorpusSettings cs;
  cs.roots = {copy_docs("demo-corpus")};
  const demo::Corpus c = demo::gather_corpus(cs);
  EXPECT_GT(c.train_files, 0);
  EXPECT_GT(c.held_out_files, 0);
  // No held-out file appears in the training text.
  std::istringstream held(c.held_out);
  std::string line;
  int long_lines = 0, found = 0;
  while (std::getline(held, line)) {
    if (line.size() < 80) continue;
    ++long_lines;
    found += c.train.find(line) != std::string::npos;
  }
  EXPECT_GT(long_lines, 0);
  EXPECT_LT(found, long_lines / 10 + 1);  // docs may quote the same sentence; files do not repeat
  EXPECT_THROW(demo::gather_corpus({{"/nonexistent-heterodyne-corpus"}}), InputError);
}

TEST(DemoTraining, LossFallsAndTheModelIsBitwiseReproducible) {
  const std::string corpus = copy_docs("demo-train-corpus");
  const demo::DemoSettings s = tiny_settings(corpus);
  demo::DemoModel first, second;
  {
    hd::test::ScopedCacheDir cache(hd::test::temp_dir("demo-cache-1"));
    first = demo::ensure_demo_model(s, quiet);
  }
  {
    hd::test::ScopedCacheDir cache(hd::test::temp_dir("demo-cache-2"));
    second = demo::ensure_demo_model(s, quiet);
  }
  EXPECT_FALSE(first.reused);
  EXPECT_FALSE(second.reused);
  EXPECT_LT(first.after.nats_per_byte, first.before.nats_per_byte - 0.2)
      << "before " << first.before.nats_per_byte << " after " << first.after.nats_per_byte;
  EXPECT_EQ(sha256_file(first.model_path), sha256_file(second.model_path));
  EXPECT_EQ(first.after.nats_per_byte, second.after.nats_per_byte);
  EXPECT_EQ(first.continuation, second.continuation);

  // Another seed trains another model.
  demo::DemoSettings other = s;
  other.seed = 2;
  hd::test::ScopedCacheDir cache(hd::test::temp_dir("demo-cache-3"));
  const demo::DemoModel third = demo::ensure_demo_model(other, quiet);
  EXPECT_NE(sha256_file(third.model_path), sha256_file(first.model_path));

  // The trained file keeps the metadata heterodyne wrote and says what it was trained on.
  const auto model = engine::model_load(first.model_path);
  EXPECT_EQ(model->info().n_ctx_train, s.n_ctx);
  EXPECT_EQ(model->info().n_layer, 4);
  EXPECT_EQ(model->info().n_embd, 256);
}

TEST(DemoTraining, CachedModelIsReusedUntilTheCorpusChanges) {
  const std::string corpus = copy_docs("demo-cache-corpus");
  const demo::DemoSettings s = tiny_settings(corpus);
  hd::test::ScopedCacheDir cache(hd::test::temp_dir("demo-cache-reuse"));
  const demo::DemoModel a = demo::ensure_demo_model(s, quiet);
  const demo::DemoModel b = demo::ensure_demo_model(s, quiet);
  EXPECT_FALSE(a.reused);
  EXPECT_TRUE(b.reused);
  EXPECT_EQ(a.model_path, b.model_path);
  EXPECT_EQ(a.after.nats_per_byte, b.after.nats_per_byte);
  EXPECT_EQ(a.continuation, b.continuation);

  // Any change to any corpus file changes the corpus hash, hence the key.
  for (const auto& e : fs::recursive_directory_iterator(corpus)) {
    if (e.is_regular_file() && e.path().extension() == ".md") {
      std::ofstream(e.path(), std::ios::app) << "\nOne more line about llama.cpp.\n";
    }
  }
  const demo::DemoModel c = demo::ensure_demo_model(s, quiet);
  EXPECT_FALSE(c.reused);
  EXPECT_NE(c.key, a.key);
  EXPECT_NE(c.corpus_sha256, a.corpus_sha256);
  EXPECT_TRUE(fs::exists(a.model_path));  // the old one is still there for whoever uses it
}

TEST(DemoTraining, BadSettingsGetOneClearError) {
  demo::DemoSettings s = tiny_settings(copy_docs("demo-bad-corpus"));
  hd::test::ScopedCacheDir cache(hd::test::temp_dir("demo-cache-bad"));
  s.steps = 0;
  EXPECT_THROW(demo::ensure_demo_model(s, quiet), InputError);
  s.steps = 2;
  s.n_ctx = 100;  // llama.cpp would round it up to 256 and train on garbage
  EXPECT_THROW(demo::ensure_demo_model(s, quiet), InputError);
  s.n_ctx = 256;
  s.corpus_roots = {"/nonexistent-heterodyne-corpus"};
  EXPECT_THROW(demo::ensure_demo_model(s, quiet), InputError);
}

// The real demo model (trained once, then cached), diffed against its quantizations on text it
// never saw: more bits, less divergence.
TEST(DemoLadder, KlFallsWithMoreBits) {
  const demo::DemoModel d = demo::ensure_demo_model(demo::DemoSettings{}, quiet);
  const std::string dir = hd::test::temp_dir("demo-ladder");
  const std::string f32 = dir + "/demo-f32.gguf";
  fs::copy_file(d.model_path, f32, fs::copy_options::overwrite_existing);
  std::vector<double> kl;
  std::vector<std::string> files;
  for (const char* type : {"Q8_0", "Q4_K_M", "Q2_K"}) {
    const std::string out = dir + "/" + type + ".hdy";
    files.push_back(out);
    const auto r = hd::test::run_cli({"diff", "--a", f32, "--b-quant", type, "--text-file",
                                      d.held_out_path, "--chunk", "256", "--max-chunks", "6",
                                      "--no-floor", "-o", out, "--force"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(hd::test::run_cli({"show", out, "--json"}).out);
    kl.push_back(j.at("kl_mean").get<double>());
  }
  // `show` with several files prints them as a ladder, one row each, in the order given.
  const auto ladder = hd::test::run_cli({"show", files[0], files[1], files[2]});
  ASSERT_EQ(ladder.exit_code, 0) << ladder.err;
  const size_t q8 = ladder.out.find("\nQ8_0 "), q4 = ladder.out.find("\nQ4_K_M "),
               q2 = ladder.out.find("\nQ2_K ");
  ASSERT_NE(q8, std::string::npos) << ladder.out;
  EXPECT_TRUE(q8 < q4 && q4 < q2 && q2 != std::string::npos) << ladder.out;
  const auto one_file_only = hd::test::run_cli({"show", files[0], files[1], "--json"});
  EXPECT_EQ(one_file_only.exit_code, 2);
  EXPECT_NE(one_file_only.err.find("take one file"), std::string::npos) << one_file_only.err;

  EXPECT_LT(kl[0], kl[1]);
  EXPECT_LT(kl[1], kl[2]);
  EXPECT_GT(kl[0], 0.0);  // a trained model: quantization shows
  // Training worked: far below a uniform guess over the vocabulary.
  EXPECT_LT(d.after.nats_per_byte, d.before.nats_per_byte * 0.7);
}

TEST(DemoCli, BadArgumentsGetOneLineAndExitTwoBeforeAnyWork) {
  const std::string dir = hd::test::temp_dir("demo-cli");
  const struct {
    std::vector<std::string> args;
    const char* says;
  } cases[] = {
      {{"demo-model"}, "--output is required"},
      {{"demo-model", "-o", dir + "/missing/x.gguf"}, "missing"},
      {{"demo-model", "-o", dir + "/x.gguf", "--steps", "0"}, "--steps must be at least 1"},
      {{"demo-model", "-o", dir + "/x.gguf", "--lr", "0"}, "--lr must be in (0, 1]"},
      {{"demo-model", "-o", dir + "/x.gguf", "-t", "-1"}, "thread count"},
      {{"demo-model", "-o", dir + "/x.gguf", "--corpus", dir + "/nothing-here"}, "not found"},
  };
  for (const auto& c : cases) {
    const auto r = hd::test::run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir + "/x.gguf"));
}
