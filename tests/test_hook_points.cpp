// The hook on the tensors MoE layers name (engine/hook.h), built by hand on the CPU backend:
// an i32 view with strided rows (ffn_moe_topk-N) read and written a row at a time, and mixing
// weights [1, n_used, rows] in a ubatch of one row, read at the width the map gives.
#include <gtest/gtest.h>

#include <memory>

#include "engine/hook.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

using hd::engine::Hook;

namespace {

struct Tensors {
  ggml_context* ctx = nullptr;
  ggml_backend_t backend = nullptr;
  ggml_backend_buffer_t buffer = nullptr;
  Tensors() {
    ggml_init_params p{16 * ggml_tensor_overhead(), nullptr, true};
    ctx = ggml_init(p);
    backend = ggml_backend_cpu_init();
  }
  void allocate() { buffer = ggml_backend_alloc_ctx_tensors(ctx, backend); }
  ~Tensors() {
    if (buffer) ggml_backend_buffer_free(buffer);
    ggml_backend_free(backend);
    ggml_free(ctx);
  }
};

// One pass of the hook over `t` as the graph shows it: asked, then computed.
void eval(Hook& h, ggml_tensor* t, int64_t rows) {
  h.begin_decode(rows, 0, 8);
  ASSERT_TRUE(h.on_eval(t, true));
  ASSERT_TRUE(h.on_eval(t, false));
  h.end_decode();
}

}  // namespace

TEST(HookPoints, StridedExpertIdsReadAndWrittenThroughTheirStrides) {
  Tensors x;
  // argsort of 4 experts for 3 tokens, and the first 2 columns: ffn_moe_topk-0.
  ggml_tensor* sorted = ggml_new_tensor_2d(x.ctx, GGML_TYPE_I32, 4, 3);
  ggml_tensor* topk = ggml_view_2d(x.ctx, sorted, 2, 3, sorted->nb[1], 0);
  ggml_set_name(topk, "ffn_moe_topk-0");
  x.allocate();
  topk->data = sorted->data;  // ggml_view's data, as the scheduler sets it
  topk->buffer = sorted->buffer;
  const int32_t ids[12] = {3, 1, 0, 2, /**/ 2, 0, 1, 3, /**/ 1, 3, 2, 0};
  ggml_backend_tensor_set(sorted, ids, 0, sizeof ids);

  Hook read;
  read.capture("ffn_moe_topk-0");
  eval(read, topk, 3);
  EXPECT_EQ(read.width("ffn_moe_topk-0"), 2);
  EXPECT_EQ(read.captured("ffn_moe_topk-0"), (std::vector<float>{3, 1, 2, 0, 1, 3}));

  Hook write;
  const std::vector<float> rows = {0, 3};  // token 1's experts
  write.overwrite("ffn_moe_topk-0", 1, rows);
  eval(write, topk, 3);
  int32_t after[12];
  ggml_backend_tensor_get(sorted, after, 0, sizeof after);
  const int32_t expected[12] = {3, 1, 0, 2, /**/ 0, 3, 1, 3, /**/ 1, 3, 2, 0};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(after[i], expected[i]) << "element " << i;
}

TEST(HookPoints, OneRowOfThreeDimensionalWeightsReadsAtTheGivenWidth) {
  Tensors x;
  ggml_tensor* w = ggml_new_tensor_3d(x.ctx, GGML_TYPE_F32, 1, 3, 1);  // [1, n_used, 1 token]
  ggml_set_name(w, "ffn_moe_weights_scaled-0");
  x.allocate();
  const float v[3] = {0.5f, 0.3f, 0.2f};
  ggml_backend_tensor_set(w, v, 0, sizeof v);
  Hook plain;
  plain.capture("ffn_moe_weights_scaled-0");
  plain.begin_decode(1, 0, 8);
  plain.on_eval(w, true);
  plain.on_eval(w, false);
  EXPECT_THROW(plain.end_decode(), std::exception);  // read as 3 rows of 1: more than the batch

  Hook told;
  told.capture("ffn_moe_weights_scaled-0");
  told.expect_width("ffn_moe_weights_scaled-0", 3);
  eval(told, w, 1);
  EXPECT_EQ(told.width("ffn_moe_weights_scaled-0"), 3);
  EXPECT_EQ(told.captured("ffn_moe_weights_scaled-0"), (std::vector<float>{0.5f, 0.3f, 0.2f}));
}
