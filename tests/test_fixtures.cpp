// llama.cpp's architecture fixtures: `make-model --list-archs` and `make-model --arch`
// (engine/fixtures), their cache, their refusals, and that the files load and decode.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "build_info.h"
#include "common/cache_dir.h"
#include "common/sha256.h"
#include "engine/arm.h"
#include "engine/fixtures.h"
#include "engine/gguf_file.h"
#include "engine/system.h"
#include "errors.h"
#include "llama.h"
#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::run_cli;

namespace {

class FixtureTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("hd-fixtures-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// Points the binary (and this process) at another generator for one scope.
class ScopedGenerator {
 public:
  explicit ScopedGenerator(const std::string& exe) {
    if (const char* old = std::getenv(kVar)) old_ = old;
    ::setenv(kVar, exe.c_str(), 1);
  }
  ~ScopedGenerator() {
    if (old_.empty()) {
      ::unsetenv(kVar);
    } else {
      ::setenv(kVar, old_.c_str(), 1);
    }
  }
  ScopedGenerator(const ScopedGenerator&) = delete;
  ScopedGenerator& operator=(const ScopedGenerator&) = delete;

 private:
  static constexpr const char* kVar = "HETERODYNE_LLAMA_ARCHS";
  std::string old_;
};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// "name   variants" as --list-archs prints it, for one architecture ("" when it is absent).
std::string variants_of(const std::string& listing, const std::string& arch) {
  for (const std::string& line : lines(listing)) {
    std::istringstream in(line);
    std::string name;
    in >> name;
    if (name != arch) continue;
    std::string rest;
    std::getline(in, rest);
    return rest.substr(rest.find_first_not_of(' '));
  }
  return "";
}

fs::path cached_fixture(const std::string& file) {
  return hd::cache_dir() / "fixtures" / hd::build::kLlamaBuildKey / "seed-1" / file;
}

}  // namespace

TEST_F(FixtureTest, ListArchsNamesDenseAndMoeVariants) {
  const auto r = run_cli({"make-model", "--list-archs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(variants_of(r.out, "llama"), "dense, moe");
  EXPECT_EQ(variants_of(r.out, "qwen3"), "dense");
  EXPECT_EQ(variants_of(r.out, "gemma2"), "dense");
  EXPECT_EQ(variants_of(r.out, "qwen3moe"), "moe");
  EXPECT_EQ(variants_of(r.out, "gpt-oss"), "moe");
  EXPECT_EQ(variants_of(r.out, "gemma3"), "") << "the generator skips gemma3 at this llama.cpp";
  // Pinned llama.cpp: 104 architectures, 110 files; a newer tree may add some.
  EXPECT_GE(lines(r.out).size(), 100u);
  EXPECT_EQ(lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find(" architectures, "), std::string::npos) << r.err;
}

TEST_F(FixtureTest, ArchWritesThatArchitecturesGguf) {
  const std::string out = path("qwen3.gguf");
  const auto r = run_cli({"make-model", "--arch", "qwen3", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const hd::engine::GgufSummary s = hd::engine::gguf_check(out);
  EXPECT_EQ(s.architecture, "qwen3");
  EXPECT_EQ(s.n_layer, 2);
  EXPECT_EQ(hd::sha256_file(out), hd::sha256_file(cached_fixture("qwen3-dense.gguf").string()));

  const std::string moe = path("llama-moe.gguf");
  ASSERT_EQ(run_cli({"make-model", "--arch", "llama", "--moe", "-o", moe}).exit_code, 0);
  EXPECT_EQ(hd::engine::gguf_check(moe).architecture, "llama");
  EXPECT_NE(hd::sha256_file(moe), hd::sha256_file(out));
}

// Each fixture is made once per (llama.cpp build, seed); later calls copy it, without the
// generator. A damaged cached file is made again, to the same bytes.
TEST_F(FixtureTest, SecondCallUsesTheCacheAndDamageIsRepaired) {
  const hd::test::ScopedCacheDir cache(path("cache"));
  const std::string first = path("first.gguf");
  ASSERT_EQ(run_cli({"make-model", "--arch", "qwen3", "-o", first}).exit_code, 0);
  const fs::path cached = cached_fixture("qwen3-dense.gguf");
  ASSERT_TRUE(fs::is_regular_file(cached));
  const std::string sha = hd::sha256_file(first);
  {
    const ScopedGenerator none(path("no-such-generator"));
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_cli({"make-model", "--arch", "qwen3", "-o", path("second.gguf")});
    ASSERT_EQ(r.exit_code, 0) << "the second call needed the generator: " << r.err;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_EQ(hd::sha256_file(path("second.gguf")), sha);
    // A fixture not made yet does need it, and says how to build it.
    hd::test::expect_refusal(run_cli({"make-model", "--arch", "gemma2", "-o", path("g.gguf")}), 1,
                             "build it with make fixtures", "gemma2 without a generator");
  }
  fs::resize_file(cached, 1000);
  ASSERT_EQ(run_cli({"make-model", "--arch", "qwen3", "-o", path("third.gguf")}).exit_code, 0);
  EXPECT_EQ(hd::sha256_file(path("third.gguf")), sha);
  EXPECT_EQ(hd::sha256_file(cached.string()), sha);
}

TEST_F(FixtureTest, SeedChangesTheWeights) {
  const std::string a = path("s1.gguf"), b = path("s2.gguf");
  ASSERT_EQ(run_cli({"make-model", "--arch", "qwen3", "-o", a}).exit_code, 0);
  ASSERT_EQ(run_cli({"make-model", "--arch", "qwen3", "--seed", "2", "-o", b}).exit_code, 0);
  EXPECT_NE(hd::sha256_file(a), hd::sha256_file(b));
}

TEST_F(FixtureTest, ArchitecturesWithoutAFixtureAreOneLine) {
  const std::string out = path("x.gguf");
  hd::test::expect_refused({"make-model", "--arch", "no-such-arch", "-o", out},
                           "llama.cpp names no architecture 'no-such-arch'");
  hd::test::expect_refused({"make-model", "--arch", "gemma3", "-o", out},
                           "makes no model of architecture 'gemma3': make-model --preset "
                           "tiny-gemma3 writes one");
  hd::test::expect_refused({"make-model", "--arch", "qwen3moe", "-o", out}, "add --moe");
  hd::test::expect_refused({"make-model", "--arch", "qwen3", "--moe", "-o", out},
                           "leave out --moe");
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(FixtureTest, OutputRulesHoldAndAreCheckedFirst) {
  const std::string out = path("kept.gguf");
  hd::test::write_file(out, "not a model");
  {
    // The refusal comes before any generating: no generator is needed to get it.
    const ScopedGenerator none(path("no-such-generator"));
    hd::test::expect_refused({"make-model", "--arch", "gemma2", "-o", out}, "already exists");
  }
  EXPECT_EQ(hd::test::read_file(out), "not a model");
  hd::test::expect_refused({"make-model", "--arch", "qwen3", "-o", path("no-dir/m.gguf")},
                           "no-dir");
  hd::test::expect_refused({"make-model", "--arch", "qwen3", "-o", dir_.string()}, "");
  ASSERT_EQ(run_cli({"make-model", "--arch", "qwen3", "-o", out, "--force"}).exit_code, 0);
  EXPECT_EQ(hd::engine::gguf_check(out).architecture, "qwen3");
  // The cached file is one of the command's inputs: never its output.
  const std::string cached = cached_fixture("qwen3-dense.gguf").string();
  const std::string sha = hd::sha256_file(cached);
  hd::test::expect_refused({"make-model", "--arch", "qwen3", "-o", cached, "--force"}, "");
  EXPECT_EQ(hd::sha256_file(cached), sha);
}

TEST_F(FixtureTest, FlagsThatDoNotMixAreRefused) {
  const std::string out = path("x.gguf");
  using hd::test::expect_refused;
  expect_refused({"make-model", "--arch", "qwen3", "--preset", "tiny-llama", "-o", out},
                 "excludes");
  expect_refused({"make-model", "--arch", "qwen3", "--type", "f16", "-o", out}, "excludes");
  expect_refused({"make-model", "--preset", "tiny-llama", "--moe", "-o", out}, "requires");
  expect_refused({"make-model", "--list-archs", "-o", out}, "excludes");
  expect_refused({"make-model", "-o", out}, "needs --preset NAME or --arch NAME");
  expect_refused({"make-model", "--arch", "qwen3"}, "needs -o");
}

TEST_F(FixtureTest, MissingGeneratorIsOneLine) {
  const hd::test::ScopedCacheDir cache(path("cache"));
  const ScopedGenerator none(path("no-such-generator"));
  hd::test::expect_refusal(run_cli({"make-model", "--list-archs"}), 1,
                           "build it with make fixtures", "--list-archs without a generator");
}

namespace {

// The architectures llama.cpp's test runs through llama_encode before decoding (encoder-decoder
// and diffusion models): test-llama-archs.cpp, test_backends.
bool encodes_first(const std::string& arch) {
  return arch == "t5" || arch == "dream" || arch == "llada" || arch == "llada-moe" ||
         arch == "rnd1";
}

// What llama.cpp made of a fixture: `why` is "" when it loaded and decoded with no NaN or +inf
// logit; `masked` counts the -inf logits of the first position (qwen3tts masks the ids past
// its codec head's 3072).
struct Decoded {
  std::string why;
  int masked = 0;
};

// Fills `batch` with tokens 0..n-1 at positions 0..n-1, every logit asked for.
void fill_batch(llama_batch& batch, int n) {
  for (int i = 0; i < n; ++i) {
    batch.token[i] = i;
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = n;
}

Decoded check_logits(llama_context* ctx, int n, int n_vocab) {
  Decoded d;
  for (int i = 0; i < n && d.why.empty(); ++i) {
    const float* row = llama_get_logits_ith(ctx, i);
    int masked = 0;
    for (int v = 0; v < n_vocab; ++v) {
      if (std::isnan(row[v]) || row[v] == INFINITY) d.why = "a logit is NaN or +inf";
      masked += row[v] == -INFINITY ? 1 : 0;
    }
    if (masked == n_vocab) d.why = "every logit is -inf";
    if (i == 0) d.masked = masked;
  }
  return d;
}

// llama.cpp itself on a fixture, as its test runs it: load on the CPU, decode 16 tokens.
Decoded load_and_decode(const std::string& file, const std::string& arch) {
  hd::engine::system_init();
  llama_model* model = llama_model_load_from_file(file.c_str(), llama_model_default_params());
  if (model == nullptr) return {"llama.cpp could not load it"};
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 64;
  cp.n_batch = cp.n_ubatch = 64;
  cp.n_threads = cp.n_threads_batch = 2;
  llama_context* ctx = llama_init_from_model(model, cp);
  Decoded d{ctx == nullptr ? "no context" : ""};
  if (ctx != nullptr) {
    const int n = 16;
    llama_batch batch = llama_batch_init(n, 0, 1);
    fill_batch(batch, n);
    if (encodes_first(arch) && llama_encode(ctx, batch) != 0) d.why = "llama_encode failed";
    if (d.why.empty() && llama_decode(ctx, batch) != 0) d.why = "llama_decode failed";
    if (d.why.empty()) d = check_logits(ctx, n, llama_vocab_n_tokens(llama_model_get_vocab(model)));
    llama_batch_free(batch);
    llama_free(ctx);
  }
  llama_model_free(model);
  return d;
}

}  // namespace

namespace {

// A fixture's logits through heterodyne's own arm at default settings: 16 tokens.
std::vector<float> arm_logits(const std::string& file) {
  auto model = hd::engine::model_load(file);
  hd::engine::ArmSettings s;
  s.model = file;
  s.n_threads = 2;
  hd::engine::Arm arm(model, s, 16);
  std::vector<int32_t> tokens(16);
  for (int i = 0; i < 16; ++i) tokens[i] = i * 7 % 128;
  std::vector<float> logits;
  arm.run_chunk(tokens, nullptr, logits);
  EXPECT_EQ(logits.size(), 16u * static_cast<size_t>(model->info().n_vocab)) << file;
  return logits;
}

// ... a vocabulary of 128 ids, every logit finite.
void expect_arm_decodes(const std::string& file) {
  const std::vector<float> logits = arm_logits(file);
  EXPECT_EQ(logits.size(), 16u * 128u) << file;
  for (float x : logits) ASSERT_TRUE(std::isfinite(x)) << file;
}

}  // namespace

// Fixtures of architectures with attention, recurrent state and MoE routing decode in llama.cpp
// itself and through heterodyne's arms alike (the coverage matrix runs every fixture through
// the analyses: test_architectures.cpp).
TEST(FixtureEngine, FixturesRunThroughAnArmAsInLlamaCpp) {
  for (const auto& [arch, moe] : {std::pair{"llama", false}, {"llama", true}, {"qwen3", false},
                                  {"gemma2", false}, {"gpt-oss", true}, {"mamba", false}}) {
    const std::string file = hd::engine::ensure_fixture(arch, moe, 1);
    EXPECT_EQ(load_and_decode(file, arch).why, "") << file;
    expect_arm_decodes(file);
  }
}

// llama.cpp turns flash attention off for Grok whatever -fa says, and then refuses a quantized
// V cache as "requires flash_attn": heterodyne says why before loading (issue 40), and records
// what ran, "on→off", where -fa on was asked for.
TEST(FixtureEngine, GrokRunsWithoutFlashAttentionAndSaysSo) {
  const std::string file = hd::engine::ensure_fixture("grok", true, 1);
  auto model = hd::engine::model_load(file);
  hd::engine::ArmSettings s;
  s.model = file;
  s.n_threads = 2;
  s.flash_attn = "on";
  s.cache_type_v = "q8_0";
  try {
    hd::engine::Arm arm(model, s, 16);
    ADD_FAILURE() << "a quantized V cache on grok was accepted";
  } catch (const hd::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("llama.cpp turns flash attention off for the grok "
                                         "architecture, so a quantized V cache (q8_0) cannot be "
                                         "used with it"),
              std::string::npos)
        << e.what();
  }
  s.cache_type_v = "f16";
  const hd::engine::Arm arm(model, s, 16);
  EXPECT_EQ(arm.facts().value("flash_attn", ""), "off") << arm.facts().dump();
}

// -fa auto is resolved by llama.cpp per model and device; an arm records what ran (on this CPU
// llama.cpp enables it), and -fa off stays off.
TEST(FixtureEngine, AnArmRecordsTheFlashAttentionLlamaCppRan) {
  const std::string file = hd::engine::ensure_fixture("llama", false, 1);
  auto model = hd::engine::model_load(file);
  for (const auto& [asked, ran] : {std::pair{"auto", "on"}, {"off", "off"}, {"on", "on"}}) {
    hd::engine::ArmSettings s;
    s.model = file;
    s.n_threads = 2;
    s.flash_attn = asked;
    const hd::engine::Arm arm(model, s, 16);
    EXPECT_EQ(arm.facts().value("flash_attn", ""), ran) << asked;
  }
}

// qwen3tts pads its codec head's logits with -inf in front (ids 0..1023 of 4096, qwen3vl.cpp):
// masked tokens (probability 0), which an arm passes on (it used to refuse the model as "weights
// may be corrupt"). Its diff against its Q8_0 gives a finite KL above 0 with no +inf position
// (both arms mask the same ids); every next token of ids below 128 is masked, so both NLLs are
// +inf there: counted, and the PPLs are none (null) rather than NaN.
TEST(FixtureEngine, MaskedTokensAreNotRefused) {
  const std::string file = hd::engine::ensure_fixture("qwen3tts", false, 1);
  const std::vector<float> logits = arm_logits(file);
  size_t masked = 0;
  for (float x : logits) {
    ASSERT_FALSE(std::isnan(x));
    ASSERT_NE(x, std::numeric_limits<float>::infinity());
    masked += std::isinf(x) ? 1 : 0;
  }
  EXPECT_GT(masked, 0u);
  EXPECT_LT(masked, logits.size());
  const std::string dir = hd::test::temp_dir("fixture-masked");
  {
    std::ofstream ids(dir + "/ids.txt");
    for (int i = 0; i < 32; ++i) ids << (i * 29 + 5) % 128 << ' ';
  }
  const auto r = run_cli({"diff", "--a", file, "--b-quant", "Q8_0", "--tokens", dir + "/ids.txt",
                          "--chunk", "16", "-t", "2", "-o", dir + "/tts.hdy", "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto shown = run_cli({"show", dir + "/tts.hdy", "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const auto j = nlohmann::json::parse(shown.out);
  ASSERT_TRUE(j["kl_mean"].is_number()) << shown.out;
  EXPECT_GT(j["kl_mean"].get<double>(), 0.0);
  EXPECT_EQ(j["kl_infinite_positions"], 0) << "both arms mask the same tokens";
  EXPECT_EQ(j["nll_infinite_positions"], j["n_scored"]) << shown.out;
  EXPECT_TRUE(j["ppl_a"].is_null()) << shown.out;
  const auto text = run_cli({"show", dir + "/tts.hdy"});
  EXPECT_NE(text.out.find("PPL A            n/a (every next token masked)"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("nan"), std::string::npos) << text.out;
  EXPECT_TRUE(j["floor_a"]["kl_mean"].is_number()) << shown.out;
}

// Every fixture the generator makes, made and run through llama.cpp: slow-ish (110 files,
// 760 MiB), so only with HETERODYNE_ALL_FIXTURES=1.
TEST(FixtureEngine, EveryFixtureLoadsAndDecodes) {
  if (std::getenv("HETERODYNE_ALL_FIXTURES") == nullptr) {
    GTEST_SKIP() << "set HETERODYNE_ALL_FIXTURES=1 to make and decode every fixture";
  }
  const auto t0 = std::chrono::steady_clock::now();
  uintmax_t bytes = 0;
  std::vector<std::pair<std::string, bool>> files;
  for (const hd::engine::FixtureArch& a : hd::engine::fixture_archs()) {
    if (a.dense) files.emplace_back(a.name, false);
    if (a.moe) files.emplace_back(a.name, true);
  }
  std::vector<std::string> paths;
  for (const auto& [arch, moe] : files) {
    paths.push_back(hd::engine::ensure_fixture(arch, moe, 1));
    bytes += fs::file_size(paths.back());
  }
  const double made = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int decoded = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const Decoded d = load_and_decode(paths[i], files[i].first);
    EXPECT_EQ(d.why, "") << paths[i];
    decoded += d.why.empty() ? 1 : 0;
    if (d.masked > 0) std::printf("%s: %d logits are -inf\n", paths[i].c_str(), d.masked);
  }
  const double all = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%zu fixtures, %.0f MiB, made (or found) in %.1f s; %d decode; %.1f s in all\n",
              files.size(), static_cast<double>(bytes) / (1 << 20), made, decoded, all);
}
