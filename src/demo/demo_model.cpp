#include "demo/demo_model.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/kl.h"
#include "build_info.h"
#include "common/cache_dir.h"
#include "common/sha256.h"
#include "demo/corpus.h"
#include "demo/vocabulary.h"
#include "engine/arm.h"
#include "engine/model.h"
#include "engine/model_maker.h"
#include "engine/threads.h"
#include "engine/trainer.h"
#include "errors.h"

namespace hd::demo {
namespace fs = std::filesystem;
namespace {

// Bump when anything that shapes the model changes without showing in the settings (the
// vocabulary learner, the corpus rules, the initialisation, the schedule).
constexpr int kRecipe = 2;

std::string fmt2(double v, int digits = 3) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

int resolved_threads(const DemoSettings& s) {
  return s.n_threads > 0 ? s.n_threads : engine::allowed_cpus();
}

std::string cache_key(const DemoSettings& s, const std::string& corpus_sha) {
  const nlohmann::json k = {{"recipe", kRecipe},
                            {"corpus", corpus_sha},
                            {"seed", s.seed},
                            {"steps", s.steps},
                            {"vocab_size", s.vocab_size},
                            {"n_ctx", s.n_ctx},
                            {"lr", s.lr},
                            {"threads", resolved_threads(s)},
                            {"llama", hd::build::kLlamaCommit},
                            {"llama_flags", hd::build::kLlamaFlags}};
  return sha256_bytes(k.dump()).substr(0, 16);
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out.flush()) throw RuntimeError("cannot write " + p.string());
}

nlohmann::json loss_json(const HeldOutLoss& l) {
  return {{"nats_per_byte", l.nats_per_byte},
          {"nats_per_token", l.nats_per_token},
          {"tokens", l.tokens},
          {"bytes", l.bytes}};
}

HeldOutLoss loss_from(const nlohmann::json& j) {
  return {j.at("nats_per_byte").get<double>(), j.at("nats_per_token").get<double>(),
          j.at("tokens").get<int64_t>(), j.at("bytes").get<int64_t>()};
}

nlohmann::json summary_json(const DemoModel& d) {
  return {{"corpus_sha256", d.corpus_sha256},   {"train_files", d.train_files},
          {"held_out_files", d.held_out_files}, {"train_bytes", d.train_bytes},
          {"held_out_bytes", d.held_out_bytes}, {"train_tokens", d.train_tokens},
          {"before", loss_json(d.before)},      {"after", loss_json(d.after)},
          {"train_seconds", d.train_seconds},   {"prompt", d.prompt},
          {"continuation", d.continuation}};
}

void read_summary(const fs::path& p, DemoModel& d) {
  std::ifstream in(p);
  const nlohmann::json j = nlohmann::json::parse(in);
  d.corpus_sha256 = j.at("corpus_sha256");
  d.train_files = j.at("train_files");
  d.held_out_files = j.at("held_out_files");
  d.train_bytes = j.at("train_bytes");
  d.held_out_bytes = j.at("held_out_bytes");
  d.train_tokens = j.at("train_tokens");
  d.before = loss_from(j.at("before"));
  d.after = loss_from(j.at("after"));
  d.train_seconds = j.at("train_seconds");
  d.prompt = j.at("prompt");
  d.continuation = j.at("continuation");
}

std::string loss_line(const char* when, const HeldOutLoss& l) {
  return std::string("demo: held-out loss ") + when + ": " + fmt2(l.nats_per_byte) +
         " nats/byte (" + fmt2(l.nats_per_token) + " nats/token over " + std::to_string(l.tokens) +
         " tokens)";
}

}  // namespace

HeldOutLoss held_out_loss(const std::string& model_path, const std::string& text, int n_ctx,
                          int max_windows, int n_threads) {
  auto model = engine::model_load(model_path);
  const std::vector<int32_t> tokens = model->tokenize(text, false);
  engine::ArmSettings as;
  as.model = model_path;
  as.n_threads = n_threads;
  engine::Arm arm(model, as, n_ctx);
  std::vector<std::string> piece(static_cast<size_t>(model->info().n_vocab));
  const int n_vocab = model->info().n_vocab;
  HeldOutLoss out;
  double nll = 0;
  std::vector<float> logits;
  // Windows spread evenly over the text, so that every held-out file has its say.
  const size_t available = tokens.size() / static_cast<size_t>(n_ctx);
  const size_t windows = std::min<size_t>(available, static_cast<size_t>(std::max(1, max_windows)));
  for (size_t w = 0; w < windows; ++w) {
    const size_t index = w * available / windows;
    std::span<const int32_t> chunk(tokens.data() + index * n_ctx, static_cast<size_t>(n_ctx));
    arm.run_chunk(chunk, nullptr, logits);
    for (int i = 0; i + 1 < n_ctx; ++i) {
      std::span<const float> row(logits.data() + size_t(i) * n_vocab, size_t(n_vocab));
      const int32_t next = chunk[i + 1];
      nll += analysis::nll(row, next);
      if (piece[next].empty()) piece[next] = model->token_text(next);
      out.bytes += static_cast<int64_t>(piece[next].size());
      ++out.tokens;
    }
  }
  if (out.tokens == 0 || out.bytes == 0) {
    throw InputError("the held-out text is shorter than one window of " + std::to_string(n_ctx) +
                     " tokens");
  }
  out.nats_per_token = nll / static_cast<double>(out.tokens);
  out.nats_per_byte = nll / static_cast<double>(out.bytes);
  return out;
}

std::string greedy_continuation(const std::string& model_path, const std::string& prompt,
                                int n_tokens, int n_ctx, int n_threads) {
  auto model = engine::model_load(model_path);
  std::vector<int32_t> tokens = model->tokenize(prompt, false);
  if (tokens.empty()) throw InputError("the prompt is empty");
  engine::ArmSettings as;
  as.model = model_path;
  as.n_threads = n_threads;
  engine::Arm arm(model, as, n_ctx);
  const size_t prompt_len = tokens.size();
  std::vector<float> logits;
  for (int i = 0; i < n_tokens && static_cast<int>(tokens.size()) < n_ctx; ++i) {
    const int n = static_cast<int>(tokens.size());
    arm.run_chunk(tokens, nullptr, logits, n - 1);
    tokens.push_back(
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
  }
  return model->detokenize(std::span<const int32_t>(tokens).subspan(prompt_len));
}

// In `tmp`: makes the untrained model, measures it, trains it, measures it again and decodes
// the prompt (all into `d`), then moves `tmp` to `dir`, where the cache finds it.
static void train_into(const fs::path& tmp, const fs::path& dir, const DemoSettings& s,
                       const Corpus& corpus, const Vocabulary& vocab, DemoModel& d,
                       const std::function<void(const std::string&)>& progress) {
  std::error_code ec;
  const std::string init = (tmp / "init-f32.gguf").string();
  engine::ModelSpec spec;
  spec.preset = "demo-llama";
  spec.seed = s.seed;
  spec.type = "f32";
  spec.vocabulary = &vocab;
  engine::make_model(spec, init);

  const int threads = resolved_threads(s);
  std::vector<int32_t> train_tokens = engine::model_load(init)->tokenize(corpus.train, false);
  d.train_tokens = static_cast<int64_t>(train_tokens.size());
  progress("demo: vocabulary of " + std::to_string(vocab.tokens.size()) + " tokens, " +
           fmt2(double(d.train_bytes) / double(d.train_tokens), 2) + " bytes per token");
  write_text(tmp / "held-out.txt", corpus.held_out);
  d.before = held_out_loss(init, corpus.held_out, s.n_ctx, s.eval_windows, threads);
  progress(loss_line("before training", d.before));

  engine::TrainSettings ts;
  ts.n_ctx = s.n_ctx;
  ts.steps = s.steps;
  ts.lr = s.lr;
  ts.lr_min = s.lr / 10;
  ts.n_threads = threads;
  ts.seed = s.seed;
  const std::string model = (tmp / "model-f32.gguf").string();
  engine::train_model(
      init, train_tokens, ts, model,
      {{"general.name", "heterodyne demo (trained, seed " + std::to_string(s.seed) + ")"},
       {"heterodyne.demo.key", d.key},
       {"heterodyne.demo.corpus_sha256", corpus.sha256},
       {"heterodyne.demo.steps", std::to_string(s.steps)}},
      [&](const engine::TrainProgress& p) {
        d.train_seconds = p.seconds;
        progress("demo: train step " + std::to_string(p.step) + "/" + std::to_string(p.steps) +
                 "  loss " + fmt2(p.loss) + " nats/token  " + fmt2(p.seconds, 0) + " s");
      });
  fs::remove(init, ec);
  d.after = held_out_loss(model, corpus.held_out, s.n_ctx, s.eval_windows, threads);
  progress(loss_line("after training", d.after));
  d.prompt = s.prompt;
  d.continuation = greedy_continuation(model, s.prompt, s.continuation_tokens, s.n_ctx, threads);
  std::ofstream(tmp / "summary.json") << summary_json(d).dump(2) << "\n";
  fs::rename(tmp, dir, ec);
  if (ec && !fs::is_regular_file(dir / "summary.json")) {
    throw RuntimeError("cannot move " + tmp.string() + " to " + dir.string() + ": " + ec.message());
  }
  fs::remove_all(tmp, ec);  // another process finished the same model first
}

DemoModel ensure_demo_model(const DemoSettings& s,
                            const std::function<void(const std::string&)>& progress) {
  if (s.steps < 1) throw InputError("--steps must be at least 1");
  if (!(s.lr > 0 && s.lr <= 1)) throw InputError("--lr must be in (0, 1]");
  CorpusSettings cs;
  cs.roots = s.corpus_roots.empty() ? default_corpus_roots() : s.corpus_roots;
  const Corpus corpus = gather_corpus(cs);

  DemoModel d;
  d.key = cache_key(s, corpus.sha256);
  const fs::path dir = cache_dir() / "demo" / d.key;
  d.model_path = (dir / "model-f32.gguf").string();
  d.held_out_path = (dir / "held-out.txt").string();
  std::error_code ec;
  if (fs::is_regular_file(dir / "summary.json", ec)) {
    read_summary(dir / "summary.json", d);
    d.reused = true;
    progress("demo: reusing the trained model " + d.model_path);
    if (d.prompt != s.prompt) {  // another prompt: decode it now (not part of the cached result)
      d.prompt = s.prompt;
      d.continuation = greedy_continuation(d.model_path, s.prompt, s.continuation_tokens, s.n_ctx,
                                           resolved_threads(s));
    }
    return d;
  }

  d.corpus_sha256 = corpus.sha256;
  d.train_files = corpus.train_files;
  d.held_out_files = corpus.held_out_files;
  d.train_bytes = static_cast<int64_t>(corpus.train.size());
  d.held_out_bytes = static_cast<int64_t>(corpus.held_out.size());
  progress("demo: corpus " + std::to_string(d.train_bytes / 1024) + " KiB from " +
           std::to_string(d.train_files) + " files, " + std::to_string(d.held_out_bytes / 1024) +
           " KiB held out from " + std::to_string(d.held_out_files) + " other files");

  VocabularySettings vs;
  vs.size = s.vocab_size;
  const Vocabulary vocab = learn_vocabulary(corpus.train, vs);

  const fs::path tmp = dir.string() + ".part-" + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) throw RuntimeError("cannot create " + tmp.string() + ": " + ec.message());
  try {
    train_into(tmp, dir, s, corpus, vocab, d, progress);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return d;
}

}  // namespace hd::demo
