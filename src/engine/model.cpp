#include "engine/model.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <mutex>

#include "common/fatal.h"
#include "engine/gguf_file.h"
#include "engine/mapped_pages.h"
#include "engine/system.h"
#include "errors.h"
#include "ggml-backend.h"
#include "llama.h"

namespace hd::engine {

Model::~Model() {
  if (model_ != nullptr && weights_ == nullptr) llama_model_free(model_);
}

void Model::share_vocabulary(std::shared_ptr<Weights> w) {
  if (w == nullptr || weights_ != nullptr || w->path() != info_.path) return;
  llama_model_free(model_);
  model_ = w->handle();
  weights_ = std::move(w);
}

Weights::~Weights() {
  if (model_ != nullptr) llama_model_free(model_);
}

namespace {

// Drops the pages of the loaded files whose mappings are their weights, and populates them
// again when it goes out of scope, the load having succeeded or not.
class ParkedMappings {
 public:
  ParkedMappings(const std::map<std::string, std::weak_ptr<Weights>>& loaded,
                 const std::string& loading) {
    for (const auto& [key, weak] : loaded) {
      const auto other = weak.lock();
      if (other == nullptr || !other->mapping_resident() || other->path() == loading) continue;
      if (std::find(paths_.begin(), paths_.end(), other->path()) != paths_.end()) continue;
      release_mapped_pages(other->path());
      paths_.push_back(other->path());
    }
  }
  ~ParkedMappings() {
    for (const auto& p : paths_) populate_mapped_pages(p);
  }
  ParkedMappings(const ParkedMappings&) = delete;
  ParkedMappings& operator=(const ParkedMappings&) = delete;

 private:
  std::vector<std::string> paths_;
};

}  // namespace

std::shared_ptr<Weights> load_weights(const std::string& path, const Placement& where) {
  static std::map<std::string, std::weak_ptr<Weights>> loaded;
  std::string key = path;
  for (const auto& d : where.devices) key.append("|").append(d);
  key.append("|").append(std::to_string(where.n_gpu_layers));
  std::lock_guard lock(model_load_mutex());  // also guards `loaded`
  if (auto w = loaded[key].lock()) return w;
  gguf_check(path);  // the file may have changed since its vocabulary was read
  system_init();
  llama_model_params mp = llama_model_default_params();
  // Only the devices named: llama.cpp would otherwise offload to every GPU it finds.
  std::vector<ggml_backend_dev_t> devices;
  for (const auto& name : where.devices) {
    ggml_backend_dev_t d = ggml_backend_dev_by_name(name.c_str());
    if (d == nullptr) throw RuntimeError("device '" + name + "' vanished after it was resolved");
    devices.push_back(d);
  }
  devices.push_back(nullptr);
  mp.devices = devices.data();
  mp.n_gpu_layers = where.on_cpu() ? 0 : where.n_gpu_layers < 0 ? 999 : where.n_gpu_layers;
  // While a file loads, the files loaded before whose mappings are their weights stay out of
  // memory: a load that copies tensors out holds its whole mapping and the copies at once, and
  // beside a resident f16 file that was a run's peak (llama3.2-3b f16 then Q4_K_M: 1.192 × the
  // two files, 1.149 with these pages out). They are made resident again in one call after.
  ParkedMappings parked(loaded, path);
  std::shared_ptr<Weights> w(new Weights());
  w->placement_ = where;
  w->path_ = path;
  fatal::add_mapped_file(path);  // llama.cpp maps it: a SIGBUS later names it when it shrinks
  fatal::set_activity("loading '" + path + "'");
  const size_t copy_buffers_before = weight_copy_buffers_logged();
  (void)last_llama_error();  // what an earlier failure left is not this load's reason
  w->model_ = llama_model_load_from_file(path.c_str(), mp);
  fatal::set_activity("");
  if (w->model_ == nullptr) {
    const std::string why = last_llama_error();
    throw InputError("llama.cpp could not load '" + path + "'" + (why.empty() ? "" : ": " + why));
  }
  // What was copied out of the mapping (tensors repacked for the CPU, offloaded to a GPU) need
  // not stay resident, and only then are the pages dropped: every page a pass reads faults back
  // in on the first pass, about 1.5 s of a diff on the 1.2 GB f16 file of the bench here, for
  // nothing where nothing was copied. Only speed and residency depend on this, never a number:
  // a dropped page comes back from the page cache. (A llama.cpp that logs its buffers otherwise
  // keeps every page, as it would itself.)
  w->mapping_resident_ = weight_copy_buffers_logged() == copy_buffers_before;
  if (!w->mapping_resident_) release_mapped_pages(path);
  loaded[key] = w;
  return w;
}

static std::string describe(const GgufSummary& s) {
  const double n = static_cast<double>(s.n_params);
  char size[32];
  if (n >= 1e9) std::snprintf(size, sizeof size, "%.2fB", n / 1e9);
  else if (n >= 1e6) std::snprintf(size, sizeof size, "%.1fM", n / 1e6);
  else std::snprintf(size, sizeof size, "%.1fK", n / 1e3);
  std::string type = s.weight_type;
  for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s.architecture + " " + size + " " + type;
}

std::shared_ptr<Model> model_load(const std::string& path) {
  const GgufSummary summary = gguf_check(path);
  system_init();
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  std::shared_ptr<Model> m(new Model());
  fatal::set_activity("reading the vocabulary of '" + path + "'");
  (void)last_llama_error();  // what an earlier failure left is not this load's reason
  m->model_ = llama_model_load_from_file(path.c_str(), mp);
  fatal::set_activity("");
  if (m->model_ == nullptr) {
    const std::string why = last_llama_error();
    throw InputError("llama.cpp could not load '" + path + "'" + (why.empty() ? "" : ": " + why));
  }
  ModelInfo& i = m->info_;
  const llama_model* lm = m->model_;
  const llama_vocab* vocab = llama_model_get_vocab(lm);
  i.path = path;
  i.architecture = summary.architecture;
  i.name = summary.name;
  // llama_model_desc needs the hyperparameters a vocabulary-only load skips: the same facts,
  // from the file ("llama 260.1K F32", "qwen3 596.0M Q4_K").
  i.description = describe(summary);
  // A vocabulary-only load skips the hyperparameters: the shape comes from the metadata.
  i.n_layer = summary.n_layer;
  i.n_embd = summary.n_embd;
  i.n_head = summary.n_head;
  i.n_head_kv = summary.n_head_kv;
  i.head_dim_k = summary.head_dim_k;
  i.head_dim_v = summary.head_dim_v;
  i.n_ctx_train = summary.n_ctx_train;
  // No attention heads is a model without attention (mamba, rwkv): it has no per-head points.
  if (i.n_layer < 1 || i.n_embd < 1) {
    throw InputError("'" + path + "' lacks " + i.architecture + ".block_count or " +
                     i.architecture + ".embedding_length");
  }
  i.n_vocab = llama_vocab_n_tokens(vocab);
  i.n_params = summary.n_params;  // the vocabulary-only load has no tensors to count
  i.file_size = summary.file_size;
  i.add_bos = llama_vocab_get_add_bos(vocab);
  i.bos = llama_vocab_bos(vocab);
  i.has_vocab = llama_vocab_type(vocab) != LLAMA_VOCAB_TYPE_NONE;
  return m;
}

static std::vector<int32_t> tokenize_or_throw(const llama_vocab* vocab, std::string_view text,
                                              bool add_special, bool parse_special) {
  std::vector<llama_token> out(text.size() + 8);
  int32_t n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), out.data(),
                             static_cast<int32_t>(out.size()), add_special, parse_special);
  if (n < 0) {
    out.resize(static_cast<size_t>(-n));
    n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), out.data(),
                       static_cast<int32_t>(out.size()), add_special, parse_special);
  }
  if (n < 0) throw RuntimeError("llama_tokenize failed");
  out.resize(static_cast<size_t>(n));
  return out;
}

std::vector<int32_t> Model::tokenize(std::string_view text, bool add_special,
                                     bool parse_special) const {
  if (!info_.has_vocab) {
    throw InputError("'" + info_.path +
                     "' has no vocabulary (tokenizer no_vocab): it cannot read a text; give "
                     "its input as token ids, --tokens FILE");
  }
  const llama_vocab* vocab = llama_model_get_vocab(model_);
  try {
    return tokenize_or_throw(vocab, text, add_special, parse_special);
  } catch (const std::exception&) {
    // Some vocabularies have no byte fallback and llama.cpp throws (std::out_of_range) on a
    // character they cannot encode. Find the first line that fails, to name it.
    size_t start = 0;
    int line = 1;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view l = text.substr(start, end - start);
      try {
        tokenize_or_throw(vocab, l, false, parse_special);
      } catch (const std::exception&) {
        std::string shown(l.substr(0, 60));
        throw InputError(
            "the text cannot be encoded by this model's vocabulary (it has no byte "
            "fallback): line " +
            std::to_string(line) + ": \"" + shown + "\"");
      }
      start = end + 1;
      ++line;
    }
    throw InputError("the text cannot be encoded by this model's vocabulary");
  }
}

std::string Model::token_text(int32_t token) const {
  if (!info_.has_vocab) return "";
  const llama_vocab* vocab = llama_model_get_vocab(model_);
  std::string piece(64, '\0');
  int32_t n =
      llama_token_to_piece(vocab, token, piece.data(), static_cast<int32_t>(piece.size()), 0, true);
  if (n < 0) {  // longer than the buffer: -n is the size it needs
    piece.resize(static_cast<size_t>(-n));
    n = llama_token_to_piece(vocab, token, piece.data(), static_cast<int32_t>(piece.size()), 0,
                             true);
  }
  piece.resize(static_cast<size_t>(std::max(n, 0)));
  return piece;
}

std::string Model::detokenize(std::span<const int32_t> tokens) const {
  const llama_vocab* vocab = llama_model_get_vocab(model_);
  std::string text(tokens.size() * 4 + 16, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int32_t n = llama_detokenize(vocab, tokens.data(), static_cast<int32_t>(tokens.size()),
                                       text.data(), static_cast<int32_t>(text.size()), true, false);
    if (n >= 0) {
      text.resize(static_cast<size_t>(n));
      return text;
    }
    text.resize(static_cast<size_t>(-n));  // -n is the size it needs
  }
  throw RuntimeError("llama_detokenize failed");
}

std::optional<std::string> vocab_difference(const Model& a, const Model& b) {
  const ModelInfo& ia = a.info();
  const ModelInfo& ib = b.info();
  if (ia.n_vocab != ib.n_vocab) {
    return "vocabulary sizes differ: " + std::to_string(ia.n_vocab) + " vs " +
           std::to_string(ib.n_vocab);
  }
  if (ia.add_bos != ib.add_bos || ia.bos != ib.bos) return std::string("BOS settings differ");
  if (ia.has_vocab != ib.has_vocab) {
    return std::string("one has no vocabulary (tokenizer no_vocab), the other has one");
  }
  if (!ia.has_vocab) return std::nullopt;  // ids alone, as many on both sides: nothing to differ
  const llama_vocab* va = llama_model_get_vocab(a.handle());
  const llama_vocab* vb = llama_model_get_vocab(b.handle());
  for (int32_t t = 0; t < ia.n_vocab; ++t) {
    if (std::string_view(llama_vocab_get_text(va, t)) != llama_vocab_get_text(vb, t)) {
      return "first differing token is id " + std::to_string(t) + ": '" +
             llama_vocab_get_text(va, t) + "' vs '" + llama_vocab_get_text(vb, t) + "'";
    }
  }
  return std::nullopt;
}

}  // namespace hd::engine
