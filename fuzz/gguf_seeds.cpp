// Writes the seed inputs of fuzz_gguf (fuzz/corpus/gguf/): complete, loadable GGUF models small
// enough to mutate quickly (a few KB: 1-2 layers, width 16, a byte-level SPM vocabulary), so
// that mutations reach llama.cpp's loader, tokenizer and graph instead of stopping at a
// truncation check. Run once: fuzz_gguf_seeds DIR.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"

namespace {

struct Shape {
  const char* name;
  const char* arch;
  uint32_t n_layer, n_embd, n_head, n_head_kv, n_ff;
  bool qk_norm;  // qwen3's attn_q_norm / attn_k_norm
};

void add(gguf_context* g, ggml_context* ctx, const std::string& name, int64_t ne0, int64_t ne1,
         std::vector<std::vector<float>>& data) {
  ggml_tensor* t = ne1 > 0 ? ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ne0, ne1)
                           : ggml_new_tensor_1d(ctx, GGML_TYPE_F32, ne0);
  ggml_set_name(t, name.c_str());
  const size_t n = static_cast<size_t>(ne0 * (ne1 > 0 ? ne1 : 1));
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = ne1 > 0 ? 0.1f * std::sin(static_cast<float>(i) * 0.37f) : 1.0f;
  }
  gguf_add_tensor(g, t);
  gguf_set_tensor_data(g, name.c_str(), v.data());
  data.push_back(std::move(v));
}

void write_seed(const Shape& s, const std::string& dir) {
  gguf_context* g = gguf_init_empty();
  const std::string a = s.arch;
  gguf_set_val_str(g, "general.architecture", s.arch);
  gguf_set_val_str(g, "general.name", s.name);
  gguf_set_val_u32(g, (a + ".context_length").c_str(), 64);
  gguf_set_val_u32(g, (a + ".embedding_length").c_str(), s.n_embd);
  gguf_set_val_u32(g, (a + ".block_count").c_str(), s.n_layer);
  gguf_set_val_u32(g, (a + ".feed_forward_length").c_str(), s.n_ff);
  gguf_set_val_u32(g, (a + ".attention.head_count").c_str(), s.n_head);
  gguf_set_val_u32(g, (a + ".attention.head_count_kv").c_str(), s.n_head_kv);
  gguf_set_val_f32(g, (a + ".attention.layer_norm_rms_epsilon").c_str(), 1e-5f);
  gguf_set_val_f32(g, (a + ".rope.freq_base").c_str(), 10000.0f);
  // A byte-level SentencePiece vocabulary: <unk> <s> </s> and the 256 byte tokens.
  std::vector<std::string> texts = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    texts.push_back(piece);
    scores.push_back(0);
    types.push_back(6);
  }
  std::vector<const char*> ptrs;
  for (const auto& t : texts) ptrs.push_back(t.c_str());
  gguf_set_val_str(g, "tokenizer.ggml.model", "llama");
  gguf_set_arr_str(g, "tokenizer.ggml.tokens", ptrs.data(), ptrs.size());
  gguf_set_arr_data(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores.data(), scores.size());
  gguf_set_arr_data(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types.data(), types.size());
  gguf_set_val_u32(g, "tokenizer.ggml.unknown_token_id", 0);
  gguf_set_val_u32(g, "tokenizer.ggml.bos_token_id", 1);
  gguf_set_val_u32(g, "tokenizer.ggml.eos_token_id", 2);
  gguf_set_val_bool(g, "tokenizer.ggml.add_bos_token", true);

  const int64_t n_vocab = static_cast<int64_t>(texts.size());
  const int64_t e = s.n_embd, hd = e / s.n_head, kv = hd * s.n_head_kv;
  ggml_init_params params{size_t{1} << 20, nullptr, true};
  ggml_context* ctx = ggml_init(params);
  std::vector<std::vector<float>> data;
  add(g, ctx, "token_embd.weight", e, n_vocab, data);
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(g, ctx, b + "attn_norm.weight", e, 0, data);
    add(g, ctx, b + "attn_q.weight", e, e, data);
    add(g, ctx, b + "attn_k.weight", e, kv, data);
    add(g, ctx, b + "attn_v.weight", e, kv, data);
    add(g, ctx, b + "attn_output.weight", e, e, data);
    if (s.qk_norm) {
      add(g, ctx, b + "attn_q_norm.weight", hd, 0, data);
      add(g, ctx, b + "attn_k_norm.weight", hd, 0, data);
    }
    add(g, ctx, b + "ffn_norm.weight", e, 0, data);
    add(g, ctx, b + "ffn_gate.weight", e, s.n_ff, data);
    add(g, ctx, b + "ffn_up.weight", e, s.n_ff, data);
    add(g, ctx, b + "ffn_down.weight", s.n_ff, e, data);
  }
  add(g, ctx, "output_norm.weight", e, 0, data);
  add(g, ctx, "output.weight", e, n_vocab, data);
  const std::string path = dir + "/" + s.name + ".gguf";
  if (!gguf_write_to_file(g, path.c_str(), false)) std::fprintf(stderr, "cannot write %s\n", path.c_str());
  gguf_free(g);
  ggml_free(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_gguf_seeds DIR\n");
    return 2;
  }
  for (const Shape& s : {Shape{"seed-llama", "llama", 1, 16, 2, 1, 32, false},
                         Shape{"seed-llama-2l", "llama", 2, 16, 4, 2, 24, false},
                         Shape{"seed-qwen3", "qwen3", 1, 16, 2, 2, 32, true}}) {
    write_seed(s, argv[1]);
  }
  return 0;
}
