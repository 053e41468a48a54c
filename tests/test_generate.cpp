// generate (kinds/generate): known answers. Identical arms never part; B = A with one token's
// output row doubled (exact in f32: every logit but that token's is bitwise A's, and its own is
// exactly twice A's) parts at the first generated position where that token becomes the top-1,
// and no layer's state copied from A gives A's token back: B's output head makes it part. The
// file shows, verifies, resumes and refuses what no run can be.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/arm.h"
#include "engine/generation.h"
#include "ggml.h"
#include "gguf.h"
#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::run_cli;

namespace {

const char* const kPrompts = "Once upon a time\nThe little dog\n\nLily wanted to\n";

std::string prompts_file(const std::string& dir, const std::string& text = kPrompts) {
  const std::string path = dir + "/prompts.txt";
  std::ofstream(path) << text;
  return path;
}

std::string model() { return hd::test::shared_path("models/stories260K.gguf"); }

// A's greedy logits at every generated position (its own completion), as generate decodes.
struct Greedy {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;
};
Greedy greedy(const std::vector<int32_t>& prompt, int n) {
  auto m = hd::engine::model_load(model());
  hd::engine::ArmSettings s;
  s.model = model();
  s.n_threads = 1;
  hd::engine::Arm arm(m, s, static_cast<int>(prompt.size()) + n);
  Greedy g;
  std::vector<float> l;
  arm.run_chunk(prompt, nullptr, l, static_cast<int>(prompt.size()) - 1);
  for (int i = 0; i < n; ++i) {
    g.logits.push_back(l);
    const auto t = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
    g.tokens.push_back(t);
    if (i + 1 < n) arm.run_step(t, static_cast<int32_t>(prompt.size()) + i, nullptr, l);
  }
  return g;
}

}  // namespace

TEST(Generate, IdenticalArmsNeverPartAndTheFileVerifiesAndResumes) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("generate-same");
  const std::string out = dir + "/same.hdy";
  const auto made = run_cli({"generate", "--a", model(), "--prompts", prompts_file(dir), "-n", "24",
                             "-t", "1", "-o", out});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(hd::test::rows_text(out, "select count(*), sum(parted = -1), sum(common = 24) from generate_partings"),
            hd::test::rows_text(out, "select 3, 3, 3"));
  // Both arms' tokens, logprobs and top-5s are the same bits.
  EXPECT_EQ(hd::test::rows_text(out, "select prompt, i, token, logprob, top from generate_tokens where arm = 'a'"),
            hd::test::rows_text(out, "select prompt, i, token, logprob, top from generate_tokens where arm = 'b'"));
  const auto shown = run_cli({"show", out});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  size_t nevers = 0;
  for (size_t at = shown.out.find("parted: never"); at != std::string::npos;
       at = shown.out.find("parted: never", at + 1))
    ++nevers;
  EXPECT_EQ(nevers, 3u) << shown.out;
  EXPECT_NE(shown.out.find("B: the same as A"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("0 of 3 prompts"), std::string::npos) << shown.out;
  EXPECT_EQ(run_cli({"verify", out}).exit_code, 0);

  const std::string cut = dir + "/cut.hdy";
  fs::copy_file(out, cut);
  for (const char* table : {"generate_prompts", "generate_tokens", "generate_partings"})
    hd::test::sql(cut, std::string("DELETE FROM ") + table + " WHERE prompt = 2");
  hd::test::sql(cut, "DELETE FROM meta WHERE key IN ('integrity_sha256', 'generate'); UPDATE meta "
                     "SET value = 'running' WHERE key = 'status'");
  const auto resumed = run_cli({"generate", "--resume", cut});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::string all = "select * from generate_tokens order by prompt, arm, trial, i";
  EXPECT_EQ(hd::test::rows_text(cut, all), hd::test::rows_text(out, all));
  EXPECT_EQ(run_cli({"show", cut}).out, shown.out);

  // A changed token is caught by the integrity check, and by verify's regeneration.
  hd::test::sql(cut, "UPDATE generate_tokens SET token = token + 1 WHERE prompt = 0 AND arm = 'b' AND i = 3");
  const auto damaged = run_cli({"verify", cut});
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_NE(damaged.err.find("integrity check failed"), std::string::npos) << damaged.err;
}

TEST(Generate, AScaledOutputRowPartsWhereItsTokenBecomesTop1AndTheHeadMakesItPart) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("generate-scaled");
  const int n = 32;
  auto m = hd::engine::model_load(model());
  const auto prompt = hd::engine::tokenize_prompt(*m, "Once upon a time");
  const Greedy a = greedy(prompt, n);
  // The token to double: the first runner-up with a positive logit within half of the top-1's,
  // not in the prompt or A's completion before that point (its input embedding is not touched,
  // but the check keeps the known answer independent of tied embeddings).
  int32_t chosen = -1;
  for (int i = 1; i < n && chosen < 0; ++i) {
    std::vector<float> l = a.logits[static_cast<size_t>(i)];
    const float top = l[static_cast<size_t>(a.tokens[static_cast<size_t>(i)])];
    l[static_cast<size_t>(a.tokens[static_cast<size_t>(i)])] = -INFINITY;
    const auto second = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
    const bool seen = std::find(prompt.begin(), prompt.end(), second) != prompt.end() ||
                      std::find(a.tokens.begin(), a.tokens.begin() + i, second) != a.tokens.begin() + i;
    if (l[static_cast<size_t>(second)] > 0 && 2 * l[static_cast<size_t>(second)] > top && !seen) chosen = second;
  }
  ASSERT_GE(chosen, 0) << "no runner-up to double in A's completion";
  // Where it becomes the top-1 first: A's logits with its own doubled (lowest id among ties).
  int expected = -1;
  for (int i = 0; i < n && expected < 0; ++i) {
    std::vector<float> l = a.logits[static_cast<size_t>(i)];
    l[static_cast<size_t>(chosen)] *= 2;
    if (std::max_element(l.begin(), l.end()) - l.begin() != a.tokens[static_cast<size_t>(i)]) expected = i;
  }
  ASSERT_GE(expected, 0);
  const std::string b = dir + "/doubled.gguf";
  hd::test::rewrite_gguf(model(), b, [&](gguf_context*, ggml_context* data) {
    ggml_tensor* out = ggml_get_tensor(data, "output.weight");
    ASSERT_NE(out, nullptr);
    ASSERT_EQ(out->type, GGML_TYPE_F32);
    float* row = reinterpret_cast<float*>(static_cast<char*>(out->data) + chosen * out->nb[1]);
    for (int64_t k = 0; k < out->ne[0]; ++k) row[k] *= 2;
  });
  const std::string file = dir + "/scaled.hdy";
  const auto made = run_cli({"generate", "--a", model(), "--b", b, "--prompts",
                             prompts_file(dir, "Once upon a time\n"), "-n", std::to_string(n), "-t", "1", "-o", file});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(hd::test::rows_text(file, "select parted from generate_partings"),
            hd::test::rows_text(file, "select " + std::to_string(expected)));
  EXPECT_EQ(hd::test::rows_text(file, "select token from generate_tokens where arm = 'b' and i = " + std::to_string(expected)),
            hd::test::rows_text(file, "select " + std::to_string(chosen)));
  std::string stored = hd::test::rows_text(file, "select transplant from generate_partings");
  ASSERT_GT(stored.size(), 2u);
  const auto t = nlohmann::json::parse(stored.substr(0, stored.size() - 2));  // less "|\n"
  EXPECT_TRUE(t.at("parts").get<bool>()) << t.dump();
  EXPECT_EQ(t.at("b_top1").get<int32_t>(), chosen);
  EXPECT_EQ(t.at("verdict").at("point").get<std::string>(), "head") << t.dump();
  // B's residual stream is A's, bit for bit: every copy of it gives B's logits back.
  for (const auto& step : t.at("steps")) {
    if (step.at("point") == "head") continue;
    EXPECT_FALSE(step.at("restores").get<bool>()) << step.dump();
    EXPECT_EQ(step.at("top1").get<int32_t>(), chosen) << step.dump();
  }
  const auto shown = run_cli({"show", file});
  EXPECT_NE(shown.out.find("made to part by B's output head"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("parted at generated token " + std::to_string(expected)), std::string::npos);
  EXPECT_EQ(run_cli({"verify", file}).exit_code, 0);
}

TEST(Generate, RefusesWhatNoRunCanBeAndWritesNothing) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("generate-refused");
  const std::string out = dir + "/none.hdy";
  const std::string p = prompts_file(dir);
  const std::vector<std::string> base = {"generate", "--a", model(), "--prompts", p, "-o", out};
  auto with = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  hd::test::expect_refused(with({"--trials", "4"}), "--trials 4 needs B to be a server arm");
  hd::test::expect_refused(with({"-n", "0"}), "--max-tokens must be between 1 and 4096");
  hd::test::expect_refused(with({"-n", "2048"}), "and --max-tokens 2048 need");
  hd::test::expect_refused(with({"--chat"}), "has no chat template");
  hd::test::expect_refused(with({"--temp", "1", "--seed", "4294967295"}), "llama.cpp's \"draw a random seed\"");
  hd::test::expect_refused(with({"--b-slots", "2", "--b-slot", "3", "--trials", "2"}),
                           "slot 3 is not one of B's 2 slots");
  hd::test::expect_refused(with({"--b", model(), "--b-quant", "Q8_0"}), "one of --b MODEL.gguf or --b-quant TYPE");
  const std::string bad = dir + "/bad.jsonl";
  std::ofstream(bad) << "{\"prompt\": \"fine\"}\n{\"text\": \"no prompt\"}\n";
  hd::test::expect_refused({"generate", "--a", model(), "--prompts", bad, "-o", out},
                           "line 2 has no \"prompt\" string");
  const std::string empty = dir + "/empty.txt";
  std::ofstream(empty) << "\n\n";
  hd::test::expect_refused({"generate", "--a", model(), "--prompts", empty, "-o", out}, "holds no prompt");
  EXPECT_FALSE(fs::exists(out));
}

// A slot of its own among 4 (no neighbours) is bitwise the plain arm (test_server_arms.cpp), in
// every slot the trials take: never parted, one distinct completion, A's among them.
TEST(Generate, ServerTrialsWithoutNeighboursGiveOneCompletionAndExportHasEveryToken) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("generate-trials");
  const std::string out = dir + "/trials.hdy";
  const auto made = run_cli({"generate", "--a", model(), "--b-slots", "4", "--trials", "3", "--prompts",
                             prompts_file(dir), "-n", "16", "-t", "1", "-o", out});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(hd::test::rows_text(out, "select count(*), sum(parted = -1) from generate_partings"),
            hd::test::rows_text(out, "select 9, 9"));
  const auto j = nlohmann::json::parse(run_cli({"show", out, "--json"}).out).at("generate");
  EXPECT_EQ(j.at("distinct").at("max").get<int>(), 1) << j.dump();
  EXPECT_EQ(j.at("distinct").at("a_among_them").get<int>(), 3);
  EXPECT_EQ(j.at("prompts").size(), 3u);

  // export: a row per prompt and trial, a row per generated token, the texts joined.
  const auto prompts = run_cli({"export", out, "--format", "jsonl"});
  ASSERT_EQ(prompts.exit_code, 0) << prompts.err;
  size_t rows = 0;
  for (size_t at = 0; (at = prompts.out.find('\n', at)) != std::string::npos; ++at) ++rows;
  EXPECT_EQ(rows, 9u);
  const auto first = nlohmann::json::parse(prompts.out.substr(0, prompts.out.find('\n')));
  EXPECT_EQ(first.at("parted").get<int>(), -1);
  EXPECT_EQ(first.at("a_text"), first.at("b_text"));
  const auto tokens = run_cli({"export", out, "--table", "tokens"});
  ASSERT_EQ(tokens.exit_code, 0) << tokens.err;
  rows = 0;
  for (size_t at = 0; (at = tokens.out.find('\n', at)) != std::string::npos; ++at) ++rows;
  EXPECT_EQ(std::to_string(rows - 1) + "|\n", hd::test::rows_text(out, "select count(*) from generate_tokens"));
  hd::test::expect_refused({"export", out, "--table", "layers"}, "--table must be prompts or tokens");
  hd::test::expect_refused({"export", out, "--positions"}, "--positions is for diffs");
}

// llama.cpp's sampler chain with one seed on both arms: identical arms draw the same tokens, not
// all of them the top-1; another seed draws others; no transplant (a draw is not a top-1).
TEST(Generate, SampledIdenticalArmsDrawTheSameTokensWithOneSeed) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("generate-sampled");
  const auto run = [&](const std::string& name, const std::string& seed) {
    const std::string out = dir + "/" + name + ".hdy";
    const auto made = run_cli({"generate", "--a", model(), "--prompts", prompts_file(dir), "-n", "24",
                               "-t", "1", "--temp", "1.5", "--seed", seed, "-o", out});
    EXPECT_EQ(made.exit_code, 0) << made.err;
    return out;
  };
  const std::string one = run("one", "7"), again = run("again", "7"), other = run("other", "8");
  EXPECT_EQ(hd::test::rows_text(one, "select count(*) from generate_partings where parted >= 0"), "0|\n");
  const std::string tokens = "select prompt, arm, i, token from generate_tokens order by prompt, arm, i";
  EXPECT_EQ(hd::test::rows_text(one, tokens), hd::test::rows_text(again, tokens));
  EXPECT_NE(hd::test::rows_text(one, tokens), hd::test::rows_text(other, tokens));
  EXPECT_NE(hd::test::rows_text(one, "select count(*) from generate_tokens where token <> json_extract(top, '$[0][0]')"),
            "0|\n");
  const auto shown = run_cli({"show", one});
  EXPECT_NE(shown.out.find("sampled at temperature 1.5 with seed 7"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("the sampler's sensitivity"), std::string::npos);
  EXPECT_NE(shown.out.find("transplants: none (sampled tokens are draws"), std::string::npos);
  EXPECT_EQ(run_cli({"verify", one}).exit_code, 0);
}

// --chat: the model's own template (here ChatML, written into a copy of the model) around each
// prompt; the rendered text is what is stored and what the arms read.
TEST(Generate, ChatRendersTheModelsTemplateAndStoresTheRenderedText) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("generate-chat");
  const std::string chat_model = dir + "/chatml.gguf";
  hd::test::rewrite_gguf(model(), chat_model, [](gguf_context* meta, ggml_context*) {
    gguf_set_val_str(meta, "tokenizer.chat_template",
                     "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                     "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if "
                     "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}");
  });
  const std::string out = dir + "/chat.hdy";
  const auto made = run_cli({"generate", "--a", chat_model, "--prompts", prompts_file(dir, "Tell me a story\n"),
                             "--chat", "-n", "8", "-t", "1", "-o", out});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(hd::test::rows_text(out, "select text from generate_prompts"),
            "<|im_start|>user\nTell me a story<|im_end|>\n<|im_start|>assistant\n|\n");
  EXPECT_EQ(run_cli({"verify", out}).exit_code, 0);
}

// Two shards merged hold the rows one process writes, and the same summary (f16 against its
// Q8_0, which part on these prompts: transplants ran in the parts).
TEST(Generate, ShardsMergeIntoTheSingleRun) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("generate-shards");
  const std::string p = prompts_file(dir);
  const auto run = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"generate", "--a", hd::test::shared_path("models/TinyStories-656K.f16.gguf"),
                                     "--b", hd::test::shared_path("models/tinystories-656k-q8_0.gguf"), "--prompts", p,
                                     "-n", "16", "-t", "1", "-o", out};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto made = run_cli(args);
    EXPECT_EQ(made.exit_code, 0) << made.err;
  };
  run(dir + "/whole.hdy", {});
  run(dir + "/p0.hdy", {"--shard", "0/2"});
  run(dir + "/p1.hdy", {"--shard", "1/2"});
  const auto merged = run_cli({"merge", dir + "/p0.hdy", dir + "/p1.hdy", "-o", dir + "/merged.hdy"});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  for (const char* q : {"select * from generate_tokens order by prompt, arm, trial, i",
                        "select * from generate_partings order by prompt, trial",
                        "select * from generate_prompts order by prompt"}) {
    EXPECT_EQ(hd::test::rows_text(dir + "/merged.hdy", q), hd::test::rows_text(dir + "/whole.hdy", q)) << q;
  }
  EXPECT_EQ(run_cli({"show", dir + "/merged.hdy"}).out, run_cli({"show", dir + "/whole.hdy"}).out);
  EXPECT_NE(hd::test::rows_text(dir + "/whole.hdy", "select count(*) from generate_partings where transplant <> ''"), "0|\n");
  EXPECT_EQ(run_cli({"verify", dir + "/p1.hdy"}).exit_code, 0);
}

// A JSON line's "prompt" may be token ids, as llama-server's /completion takes them: the ids of
// a text give that text's completion; an id outside the vocabulary is refused naming its line.
TEST(Generate, TokenIdPromptsGiveTheTextsCompletion) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("generate-ids");
  auto m = hd::engine::model_load(model());
  const auto ids = hd::engine::tokenize_prompt(*m, "Once upon a time");
  const std::string jsonl = dir + "/ids.jsonl";
  std::ofstream(jsonl) << nlohmann::json{{"prompt", ids}}.dump() << "\n";
  const auto gen = [&](const std::string& prompts, const std::string& out) {
    const auto made = run_cli({"generate", "--a", model(), "--prompts", prompts, "-n", "12", "-t", "1", "-o", out});
    EXPECT_EQ(made.exit_code, 0) << made.err;
  };
  gen(jsonl, dir + "/ids.hdy");
  gen(prompts_file(dir, "Once upon a time\n"), dir + "/text.hdy");
  const std::string q = "select tokens from generate_prompts union all select token from generate_tokens";
  EXPECT_EQ(hd::test::rows_text(dir + "/ids.hdy", q), hd::test::rows_text(dir + "/text.hdy", q));
  const std::string bad = dir + "/bad.jsonl";
  std::ofstream(bad) << "{\"prompt\": [1, 2]}\n{\"prompt\": [1, 999999]}\n";
  hd::test::expect_refused({"generate", "--a", model(), "--prompts", bad, "-o", dir + "/no.hdy"},
                           "line 2: a token id must be a whole number from 0 to");
}

// A file is anyone's to edit: every damage below is refused in one line by show, show --json,
// export and report, never read past its end or printed as a number it is not.
TEST(Generate, DamagedRowsAreRefusedInOneLineByEveryReader) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("generate-damaged");
  const std::string out = dir + "/gen.hdy";
  const auto made = run_cli({"generate", "--a", hd::test::shared_path("models/TinyStories-656K.f16.gguf"),
                             "--b", hd::test::shared_path("models/tinystories-656k-q8_0.gguf"), "--prompts",
                             prompts_file(dir), "-n", "24", "-t", "1", "-o", out});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ASSERT_NE(hd::test::rows_text(out, "select count(*) from generate_partings where transplant <> ''"), "0|\n");
  const std::vector<std::pair<std::string, std::string>> damages = {
      {"no B", "DELETE FROM generate_tokens WHERE arm = 'b' AND prompt = 0; DELETE FROM generate_partings WHERE prompt = 0"},
      {"a transplant without steps", "UPDATE generate_partings SET transplant = json_remove(transplant, '$.steps') WHERE transplant <> ''"},
      {"a transplant that is not JSON", "UPDATE generate_partings SET transplant = '{' WHERE transplant <> ''"},
      {"a transplant of another token", "UPDATE generate_partings SET transplant = json_set(transplant, '$.a_token', -5) WHERE transplant <> ''"},
      {"a piece that is a number", "UPDATE generate_tokens SET top = json_set(top, '$[0][2]', 7) WHERE i = 0"},
      {"an empty top-5 entry", "UPDATE generate_tokens SET top = '[[], [], [], [], []]' WHERE i = 1"},
      {"a probability of 2", "UPDATE generate_tokens SET top = json_set(top, '$[0][1]', 2.0) WHERE i = 2"},
      {"a parting past the shorter", "UPDATE generate_partings SET parted = 999 WHERE prompt = 1"},
      {"a parting where the tokens agree", "UPDATE generate_partings SET parted = 0, common = 0 WHERE parted > 0"},
      {"a restore that is not B's top-1", "UPDATE generate_partings SET transplant = json_set(transplant, '$.steps[0].restores', json('true'), '$.steps[0].top1', -7) WHERE transplant <> ''"},
      {"a top-5 out of order", "UPDATE generate_tokens SET top = json_set(top, '$[4][1]', 0.9) WHERE i = 4"},
      {"a positive logprob", "UPDATE generate_tokens SET logprob = 0.5 WHERE i = 3"},
  };
  for (const auto& [what, sql] : damages) {
    SCOPED_TRACE(what);
    const std::string copy = dir + "/damaged.hdy";
    std::filesystem::remove(copy);
    fs::copy_file(out, copy);
    hd::test::sql(copy, sql);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"show", copy}, {"show", copy, "--json"}, {"export", copy, "--table", "tokens"},
          {"export", copy}, {"report", copy, "-o", dir + "/damaged.html", "--force"}}) {
      const auto r = run_cli(args);
      EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
      EXPECT_NE(r.err.find("is damaged"), std::string::npos) << args[0] << ": " << r.err;
    }
  }
}

// --b-quant: B is A quantized (made once, cached), as diff's; the file stores the type and the
// cached model, and resumes and verifies against it.
TEST(Generate, BQuantMakesBFromAAndTheRunVerifies) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("generate-bquant");
  const std::string out = dir + "/q.hdy";
  const std::string a = hd::test::shared_path("models/TinyStories-656K.f16.gguf");
  const auto made = run_cli({"generate", "--a", a, "--b-quant", "Q8_0", "--prompts", prompts_file(dir),
                             "-n", "16", "-t", "1", "-o", out});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto config = nlohmann::json::parse(run_cli({"show", out, "--json"}).out).at("generate");
  EXPECT_NE(config.at("b").at("model").get<std::string>().find("-Q8_0.gguf"), std::string::npos) << config.dump();
  EXPECT_NE(hd::test::rows_text(out, "select value from meta where key = 'config'").find("\"b_quant\":\"Q8_0\""),
            std::string::npos);
  EXPECT_EQ(run_cli({"verify", out}).exit_code, 0);
}
