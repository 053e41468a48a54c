#include "engine/hook.h"

#include <algorithm>

#include "build_info.h"
#include "engine/points.h"
#include "errors.h"
#include "ggml-backend.h"
#include "ggml.h"

namespace hd::engine {

void Hook::capture(const std::string& point) { points_[point].keep = true; }

void Hook::watch(const std::string& point, Watcher watcher) {
  points_[point].watcher = std::move(watcher);
}

bool Hook::watches() const {
  return std::any_of(points_.begin(), points_.end(),
                     [](const auto& p) { return static_cast<bool>(p.second.watcher); });
}

void Hook::overwrite(const std::string& point, int64_t row_begin, std::span<const float> rows) {
  points_[point].patches.push_back({row_begin, std::vector<float>(rows.begin(), rows.end())});
}

const std::vector<float>& Hook::captured(const std::string& point) const {
  auto it = points_.find(point);
  if (it == points_.end() || !it->second.keep) {
    throw RuntimeError("point '" + point + "' was not asked to be captured");
  }
  return it->second.data;
}

int64_t Hook::width(const std::string& point) const {
  auto it = points_.find(point);
  return it == points_.end() ? 0 : it->second.width;
}

int64_t Hook::first_row(const std::string& point) const {
  auto it = points_.find(point);
  return it == points_.end() ? 0 : it->second.first_row;
}

std::vector<std::string> Hook::captures() const {
  std::vector<std::string> out;
  for (const auto& [name, p] : points_) {
    if (p.keep) out.push_back(name);
  }
  return out;
}

std::vector<std::pair<std::string, const Hook::Patch*>> Hook::patches() const {
  std::vector<std::pair<std::string, const Patch*>> out;
  for (const auto& [name, p] : points_) {
    for (const auto& patch : p.patches) out.emplace_back(name, &patch);
  }
  return out;
}

void Hook::receive(const std::string& point, int64_t width, int64_t first_row,
                   std::vector<float> rows) {
  auto it = points_.find(point);
  if (it == points_.end() || !it->second.keep) {
    throw RuntimeError("the worker sent rows of '" + point + "', which were not asked for");
  }
  Point& p = it->second;
  p.width = width;
  p.first_row = first_row;
  p.rows_seen = width > 0 ? static_cast<int64_t>(rows.size()) / width : 0;
  p.data = std::move(rows);
}

void Hook::begin_decode(int64_t n_rows, int64_t first_output, int n_layer) {
  n_rows_ = n_rows;
  error_.clear();
  for (auto& [name, p] : points_) {
    p.rows_seen = 0;  // captured data keeps its size: a chunk of the same length reuses it
    const bool output_only =
        point_has_output_rows_only(name, n_layer) != (row_rule_exceptions_.count(name) > 0);
    p.first_row = output_only ? first_output : 0;
    p.output_only = output_only;
    p.ubatches_seen = 0;
  }
}

void Hook::end_decode() {
  if (!error_.empty()) throw RuntimeError(error_);
  for (auto& [name, p] : points_) {
    if (p.keep) p.data.resize(static_cast<size_t>(p.rows_seen * p.width));  // never grows here
    if (p.rows_seen == 0) {
      throw RuntimeError("graph point '" + name + "' was never produced by this model's graph " +
                         "(or a backend computed it inside a fused kernel without showing it to " +
                         "the eval callback)");
    }
    if (p.rows_seen != n_rows_ - p.first_row) {
      throw RuntimeError("graph point '" + name + "' produced " + std::to_string(p.rows_seen) +
                         " rows, expected " + std::to_string(n_rows_ - p.first_row));
    }
  }
}

// heterodyne's point names are the pinned llama.cpp's; an older build (in a worker) names the
// token embeddings "inp_embd".
static std::string_view point_of_node(const char* node) {
  static const bool renamed = std::string_view(build::kLlamaEmbeddingNode) != "embd";
  if (renamed && std::string_view(node) == build::kLlamaEmbeddingNode) return "embd";
  return node;
}

// The width and rows a point reads a tensor as: [width, rows] or [width, streams, rows] of f32,
// contiguous; or [width, rows] of i32 with rows at any stride (ffn_moe_topk-N, a view of the
// first n_expert_used columns of an argsort), read and written a row at a time as floats (the
// ids it holds are exact in a float).
static bool point_shape(const ggml_tensor* t, int64_t& width, int64_t& rows) {
  if (t->ne[3] != 1) return false;
  if (t->type == GGML_TYPE_I32) {
    if (t->ne[2] != 1 || t->nb[0] != sizeof(int32_t)) return false;
    width = t->ne[0];
    rows = t->ne[1];
    return true;
  }
  if (t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t)) return false;
  const bool streams = t->ne[2] != 1;
  width = streams ? t->ne[0] * t->ne[1] : t->ne[0];
  rows = streams ? t->ne[2] : t->ne[1];
  return true;
}

// Rows [row, row + n) of `t` from `src` ([n][width] floats), and back. An i32 point is a
// strided view: its whole span is read (and written back) in one copy, the ids picked out.
static std::vector<int32_t> whole_span(const ggml_tensor* t) {
  std::vector<int32_t> span(ggml_nbytes(t) / sizeof(int32_t));
  ggml_backend_tensor_get(t, span.data(), 0, span.size() * sizeof(int32_t));
  return span;
}

static void set_rows(ggml_tensor* t, const float* src, int64_t row, int64_t n, int64_t width) {
  if (t->type == GGML_TYPE_F32) {
    const size_t row_bytes = sizeof(float) * static_cast<size_t>(width);
    ggml_backend_tensor_set(t, src, static_cast<size_t>(row) * row_bytes,
                            static_cast<size_t>(n) * row_bytes);
    return;
  }
  std::vector<int32_t> span = whole_span(t);
  const size_t stride = t->nb[1] / sizeof(int32_t);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0; i < width; ++i) {
      span[static_cast<size_t>(row + r) * stride + static_cast<size_t>(i)] =
          static_cast<int32_t>(src[r * width + i]);
    }
  }
  ggml_backend_tensor_set(t, span.data(), 0, span.size() * sizeof(int32_t));
}

// Rows [row, row + n) of `t` into `dst`.
static void get_rows(const ggml_tensor* t, float* dst, int64_t row, int64_t n, int64_t width) {
  if (t->type == GGML_TYPE_F32) {
    const size_t row_bytes = sizeof(float) * static_cast<size_t>(width);
    ggml_backend_tensor_get(t, dst, static_cast<size_t>(row) * row_bytes,
                            static_cast<size_t>(n) * row_bytes);
    return;
  }
  std::vector<int32_t> span = whole_span(t);
  const size_t stride = t->nb[1] / sizeof(int32_t);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0; i < width; ++i) {
      dst[r * width + i] =
          static_cast<float>(span[static_cast<size_t>(row + r) * stride + static_cast<size_t>(i)]);
    }
  }
}

void Hook::list(const ggml_tensor* t) {
  const std::string_view name = point_of_node(t->name);
  for (Node& n : *nodes_) {
    if (n.name == name) {
      ++n.count;
      return;
    }
  }
  Node n;
  n.name = name;
  n.readable = point_shape(t, n.width, n.rows);
  n.op = ggml_op_desc(t);
  nodes_->push_back(std::move(n));
}

void Hook::stop_after(const std::string& point) {
  capture(point);
  stop_ = point;
}

bool Hook::on_eval(ggml_tensor* t, bool ask) {
  auto it = points_.find(point_of_node(t->name));
  if (ask && nodes_ != nullptr) list(t);
  if (ask) return it != points_.end();
  if (it == points_.end()) return true;
  try {
    handle(it->second, it->first, t);
    return it->first != stop_;  // false ends this ubatch's graph here
  } catch (const std::exception& e) {
    error_ = e.what();
    return false;  // aborts the graph: llama_decode reports failure, end_decode() the reason
  }
}

void Hook::handle(Point& p, const std::string& name, ggml_tensor* t) {
  if (t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_I32) {
    throw RuntimeError("graph point '" + name + "' has type " + ggml_type_name(t->type) +
                       ", expected f32 (or i32 ids)");
  }
  int64_t width = 0, rows = 0;
  if (!point_shape(t, width, rows)) {
    throw RuntimeError("graph point '" + name + "' is not a contiguous 2-D or 3-D tensor");
  }
  if (p.width == 0) {
    auto known = widths_.find(name);
    if (known != widths_.end()) p.width = known->second;
  }
  // One row of a 3-D point ([width, streams, 1]) looks 2-D: the width already known decides.
  if (p.width != 0 && width != p.width && t->ne[2] == 1 && t->ne[0] * t->ne[1] == p.width) {
    width = p.width;
    rows = 1;
  }
  if (p.width == 0) p.width = width;
  if (width != p.width) {
    throw RuntimeError("graph point '" + name + "' changed width between ubatches");
  }
  for (const auto& patch : p.patches) {
    if (patch.rows.size() % static_cast<size_t>(width) != 0) {
      throw RuntimeError("the rows written at graph point '" + name + "' are not " +
                         std::to_string(width) + " wide, as the graph's are");
    }
  }
  if (!layout_.empty()) {
    handle_mapped(p, name, t, width, rows);
    return;
  }
  const int64_t first = p.rows_seen;  // in this point's own rows
  if (first + rows > n_rows_ - p.first_row) {
    throw RuntimeError("graph point '" + name + "' produced more rows than the batch has");
  }
  // Overwrite first, so a capture at the same point sees what downstream sees.
  const int64_t pos = p.first_row + first;  // the batch position of this piece's row 0
  for (const auto& patch : p.patches) {
    const int64_t n_patch = static_cast<int64_t>(patch.rows.size()) / width;
    const int64_t lo = std::max(pos, patch.row_begin);
    const int64_t hi = std::min(pos + rows, patch.row_begin + n_patch);
    if (lo >= hi) continue;
    set_rows(t, patch.rows.data() + (lo - patch.row_begin) * width, lo - pos, hi - lo, width);
  }
  if (p.keep) {
    const size_t need = static_cast<size_t>((first + rows) * width);
    if (p.data.size() < need) p.data.resize(need);
    get_rows(t, p.data.data() + first * width, 0, rows, width);
  }
  if (p.watcher) {
    watched_.resize(static_cast<size_t>(rows * width));
    get_rows(t, watched_.data(), 0, rows, width);
    p.watcher(pos, watched_, width);
  }
  p.rows_seen += rows;
}

// With a layout, this piece is the next ubatch whose rows the point has (a ubatch with no
// output rows may show an output-only point no rows, or not show it at all). Each run of the
// decode's consecutive rows is patched and captured in one copy; other sequences' rows are left.
void Hook::handle_mapped(Point& p, const std::string& name, ggml_tensor* t, int64_t width,
                         int64_t rows) {
  const auto map_of = [&](size_t k) -> const std::vector<int32_t>& {
    return p.output_only ? layout_[k].outputs : layout_[k].rows;
  };
  while (rows > 0 && p.ubatches_seen < layout_.size() && map_of(p.ubatches_seen).empty()) {
    ++p.ubatches_seen;
  }
  if (p.ubatches_seen >= layout_.size()) {
    throw RuntimeError("graph point '" + name + "' came in more ubatches than the batch has");
  }
  if (p.watcher)
    throw RuntimeError("graph point '" + name + "' is watched in a decode of several sequences");
  const std::vector<int32_t>& map = map_of(p.ubatches_seen++);
  if (static_cast<int64_t>(map.size()) != rows) {
    throw RuntimeError("graph point '" + name + "' has " + std::to_string(rows) + " rows in ubatch " +
                       std::to_string(p.ubatches_seen - 1) + ", where llama.cpp's split as " +
                       "heterodyne reads it has " + std::to_string(map.size()) +
                       ": this llama.cpp splits batches otherwise (engine/server_schedule.h)");
  }
  for (int64_t r = 0; r < rows;) {
    const int64_t at = map[static_cast<size_t>(r)];
    if (at < p.first_row) {
      ++r;
      continue;
    }
    int64_t len = 1;
    while (r + len < rows && map[static_cast<size_t>(r + len)] == at + len) ++len;
    for (const auto& patch : p.patches) {
      const int64_t n_patch = static_cast<int64_t>(patch.rows.size()) / width;
      const int64_t lo = std::max(at, patch.row_begin);
      const int64_t hi = std::min(at + len, patch.row_begin + n_patch);
      if (lo < hi) set_rows(t, patch.rows.data() + (lo - patch.row_begin) * width, r + (lo - at), hi - lo, width);
    }
    if (p.keep) {
      const size_t need = static_cast<size_t>((at - p.first_row + len) * width);
      if (p.data.size() < need) p.data.resize(need);
      get_rows(t, p.data.data() + (at - p.first_row) * width, r, len, width);
    }
    p.rows_seen += len;
    r += len;
  }
}

}  // namespace hd::engine
