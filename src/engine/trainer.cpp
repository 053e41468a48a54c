#include "engine/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/splitmix.h"
#include "engine/gguf_file.h"
#include "engine/system.h"
#include "engine/threads.h"
#include "errors.h"
#include "ggml-opt.h"
#include "gguf.h"
#include "llama.h"

namespace hd::engine {
namespace {

struct ModelFree {
  void operator()(llama_model* m) const { llama_model_free(m); }
};
struct ContextFree {
  void operator()(llama_context* c) const { llama_free(c); }
};
struct DatasetFree {
  void operator()(ggml_opt_dataset* d) const { ggml_opt_dataset_free(d); }
};
struct ResultFree {
  void operator()(ggml_opt_result* r) const { ggml_opt_result_free(r); }
};

// ggml_opt asks for the optimizer parameters once per step: linear warm-up, then cosine decay.
struct Schedule {
  const TrainSettings* s = nullptr;
  int step = 0;
};

ggml_opt_optimizer_params schedule_params(void* userdata) {
  auto* sch = static_cast<Schedule*>(userdata);
  const TrainSettings& s = *sch->s;
  const int t = sch->step++;
  const int warmup = std::min(s.warmup, std::max(1, s.steps / 4));  // short runs warm up less
  double lr = s.lr;
  if (t < warmup) {
    lr = double(s.lr) * (t + 1) / warmup;
  } else if (s.steps > warmup) {
    const double progress = std::min(1.0, double(t - warmup) / double(s.steps - warmup));
    lr = s.lr_min + 0.5 * (s.lr - s.lr_min) * (1.0 + std::cos(M_PI * progress));
  }
  ggml_opt_optimizer_params p = ggml_opt_get_default_optimizer_params(nullptr);
  p.adamw.alpha = static_cast<float>(lr);
  p.adamw.beta2 = s.beta2;
  p.adamw.wd = 0.0f;
  return p;
}

// `count` windows of n_ctx tokens (inputs) and the same shifted by one (labels), at offsets
// drawn from `rng`.
std::unique_ptr<ggml_opt_dataset, DatasetFree> windows(std::span<const int32_t> tokens, int n_ctx,
                                                       int count, uint64_t& rng) {
  std::unique_ptr<ggml_opt_dataset, DatasetFree> ds(
      ggml_opt_dataset_init(GGML_TYPE_I32, GGML_TYPE_I32, n_ctx, n_ctx, count, 1));
  auto* data = static_cast<int32_t*>(ggml_opt_dataset_data(ds.get())->data);
  auto* labels = static_cast<int32_t*>(ggml_opt_dataset_labels(ds.get())->data);
  const uint64_t span = tokens.size() - static_cast<size_t>(n_ctx);  // offsets 0..span-1
  for (int i = 0; i < count; ++i) {
    const size_t off = static_cast<size_t>(splitmix64(rng) % span);
    std::memcpy(data + size_t(i) * n_ctx, tokens.data() + off, size_t(n_ctx) * sizeof(int32_t));
    std::memcpy(labels + size_t(i) * n_ctx, tokens.data() + off + 1,
                size_t(n_ctx) * sizeof(int32_t));
  }
  return ds;
}

// The optimizer writes the weights in place, so they must not be mapped from the file.
// llama.cpp says so with load_mode since mid-2026 and with use_mmap before: all of engine/ is
// compiled against the older trees heterodyne-worker is built for (scripts/worker.sh), this
// file included, though the worker never trains.
template <class Params>
void load_unmapped(Params& mp) {
  if constexpr (requires { mp.load_mode; }) {
    mp.load_mode = static_cast<decltype(mp.load_mode)>(0);  // LLAMA_LOAD_MODE_NONE
  } else {
    mp.use_mmap = false;
  }
}

struct GgufFree {
  void operator()(gguf_context* c) const { gguf_free(c); }
};
struct GgmlFree {
  void operator()(ggml_context* c) const { ggml_free(c); }
};

gguf_context* read_gguf(const std::string& path, ggml_context** data) {
  gguf_init_params params{};
  params.no_alloc = data == nullptr;
  params.ctx = data;
  gguf_context* g = gguf_init_from_file(path.c_str(), params);
  if (!g) throw RuntimeError("cannot read " + path);
  return g;
}

// The trained tensors under the init file's metadata, written to a temporary file and renamed.
void write_trained(const std::string& init_path, const std::string& trained_path, int n_ctx,
                   const std::vector<std::pair<std::string, std::string>>& meta,
                   const std::string& out_path) {
  std::unique_ptr<gguf_context, GgufFree> init(read_gguf(init_path, nullptr));
  ggml_context* raw = nullptr;
  std::unique_ptr<gguf_context, GgufFree> trained(read_gguf(trained_path, &raw));
  std::unique_ptr<ggml_context, GgmlFree> tensors(raw);
  std::unique_ptr<gguf_context, GgufFree> out(gguf_init_empty());
  gguf_set_kv(out.get(), init.get());
  const std::string arch =
      gguf_get_val_str(init.get(), gguf_find_key(init.get(), "general.architecture"));
  gguf_set_val_u32(out.get(), (arch + ".context_length").c_str(), static_cast<uint32_t>(n_ctx));
  for (const auto& [key, value] : meta) gguf_set_val_str(out.get(), key.c_str(), value.c_str());
  for (int64_t i = 0; i < gguf_get_n_tensors(init.get()); ++i) {
    const char* name = gguf_get_tensor_name(init.get(), i);
    ggml_tensor* t = ggml_get_tensor(tensors.get(), name);
    if (!t) throw RuntimeError(std::string("the trained model lacks tensor ") + name);
    gguf_add_tensor(out.get(), t);
  }
  const std::string part = out_path + ".part";
  if (!gguf_write_to_file(out.get(), part.c_str(), false)) {
    std::remove(part.c_str());
    throw RuntimeError("cannot write " + part);
  }
  if (std::rename(part.c_str(), out_path.c_str()) != 0) {
    std::remove(part.c_str());
    throw RuntimeError("cannot move " + part + " to " + out_path);
  }
}

// A context for training `model`: one window of s.n_ctx tokens per batch.
std::unique_ptr<llama_context, ContextFree> training_context(llama_model* model,
                                                             const TrainSettings& s) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(s.n_ctx);
  cp.n_batch = cp.n_ctx;
  cp.n_ubatch = cp.n_ctx;
  cp.n_seq_max = 1;
  cp.n_threads = s.n_threads > 0 ? s.n_threads : allowed_cpus();  // the same model on any load
  cp.n_threads_batch = cp.n_threads;
  // OUT_PROD (the backward of a matmul) has no F16 kernel: the cache must be F32, and flash
  // attention has no backward pass at all.
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.no_perf = true;
  std::unique_ptr<llama_context, ContextFree> ctx(llama_init_from_model(model, cp));
  if (!ctx)
    throw RuntimeError("llama.cpp could not create a training context: " + last_llama_error());
  // llama.cpp rounds the context up (to 256); llama_opt_epoch then expects windows of that size.
  if (llama_n_ctx(ctx.get()) != cp.n_ctx) {
    throw InputError("llama.cpp rounds a training window of " + std::to_string(s.n_ctx) +
                     " tokens up to " + std::to_string(llama_n_ctx(ctx.get())) +
                     ": use a multiple of 256");
  }
  return ctx;
}

}  // namespace

void train_model(const std::string& init_path, std::span<const int32_t> tokens,
                 const TrainSettings& s, const std::string& out_path,
                 const std::vector<std::pair<std::string, std::string>>& meta,
                 const std::function<void(const TrainProgress&)>& on_progress) {
  if (s.steps < 1) throw InputError("training needs at least one step");
  if (!(s.lr > 0 && s.lr <= 1) || !(s.lr_min >= 0 && s.lr_min <= s.lr)) {
    throw InputError("the learning rate must be in (0, 1], not " + std::to_string(s.lr));
  }
  if (s.n_ctx < 2 || tokens.size() <= static_cast<size_t>(s.n_ctx) + 1) {
    throw InputError("training needs more than " + std::to_string(s.n_ctx + 1) +
                     " tokens (one window), got " + std::to_string(tokens.size()));
  }
  gguf_check(init_path);
  system_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  load_unmapped(mp);
  std::unique_ptr<llama_model, ModelFree> model;
  {
    std::lock_guard lock(model_load_mutex());  // its buffers must not count as an arm's copies
    model.reset(llama_model_load_from_file(init_path.c_str(), mp));
  }
  if (!model)
    throw RuntimeError("llama.cpp could not load " + init_path + ": " + last_llama_error());

  auto ctx = training_context(model.get(), s);

  Schedule schedule{&s, 0};
  llama_opt_params op{};
  op.n_ctx_train = 0;
  op.param_filter = llama_opt_param_filter_all;
  op.param_filter_ud = nullptr;
  op.get_opt_pars = schedule_params;
  op.get_opt_pars_ud = &schedule;
  op.optimizer_type = GGML_OPT_OPTIMIZER_TYPE_ADAMW;
  llama_opt_init(ctx.get(), model.get(), op);

  // Training runs in blocks so that each report gives the loss of its own steps.
  uint64_t rng = s.seed;
  std::unique_ptr<ggml_opt_result, ResultFree> result(ggml_opt_result_init());
  const auto start = std::chrono::steady_clock::now();
  const int block = std::max(1, s.report_every);
  for (int done = 0; done < s.steps;) {
    const int count = std::min(block, s.steps - done);
    auto ds = windows(tokens, s.n_ctx, count, rng);
    ggml_opt_result_reset(result.get());
    llama_opt_epoch(ctx.get(), ds.get(), result.get(), nullptr, count, nullptr, nullptr);
    done += count;
    double loss = 0, unc = 0;
    ggml_opt_result_loss(result.get(), &loss, &unc);
    if (!std::isfinite(loss)) {
      throw RuntimeError("training diverged at step " + std::to_string(done) + " (loss " +
                         std::to_string(loss) + "); try a lower learning rate");
    }
    if (on_progress) {
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      on_progress({done, s.steps, loss, secs});
    }
  }
  const std::string saved = out_path + ".trained";
  llama_model_save_to_file(model.get(), saved.c_str());
  try {
    write_trained(init_path, saved, s.n_ctx, meta, out_path);
  } catch (...) {
    std::remove(saved.c_str());
    throw;
  }
  std::remove(saved.c_str());
}

}  // namespace hd::engine
