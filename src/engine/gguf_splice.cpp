#include "engine/gguf_splice.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "errors.h"
#include "ggml.h"
#include "gguf.h"

namespace hd::engine {
namespace {

struct GgufFree {
  void operator()(gguf_context* c) const { gguf_free(c); }
};
using GgufPtr = std::unique_ptr<gguf_context, GgufFree>;
struct FileClose {
  void operator()(FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<FILE, FileClose>;

// One file's tensor infos, and the file open for reading their bytes.
struct GgmlFree {
  void operator()(ggml_context* c) const { ggml_free(c); }
};

struct Source {
  GgufPtr meta;
  FilePtr file;
  std::unique_ptr<ggml_context, GgmlFree> shapes;  // the tensors' shapes, no data
};

Source open_source(const std::string& path) {
  ggml_context* shapes = nullptr;
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/&shapes};
  Source s{GgufPtr(gguf_init_from_file(path.c_str(), params)),
           FilePtr(std::fopen(path.c_str(), "rb")), {}};
  s.shapes.reset(shapes);
  if (!s.meta || !s.file || !s.shapes) throw RuntimeError("cannot read the GGUF '" + path + "'");
  return s;
}

// By ggml's tensors rather than gguf_get_tensor_ne: the workers build this file against older
// llama.cpp releases, whose gguf.h lacks it.
bool same_shape(const Source& a, const std::string& name, const Source& b) {
  const ggml_tensor* x = ggml_get_tensor(a.shapes.get(), name.c_str());
  const ggml_tensor* y = ggml_get_tensor(b.shapes.get(), name.c_str());
  if (!x || !y) return false;
  for (int d = 0; d < GGML_MAX_DIMS; ++d) {
    if (x->ne[d] != y->ne[d]) return false;
  }
  return true;
}

void copy_bytes(FILE* in, uint64_t offset, uint64_t n, FILE* out, std::vector<char>& buffer,
                const std::string& what) {
  if (std::fseek(in, static_cast<long>(offset), SEEK_SET) != 0)
    throw RuntimeError("cannot seek in " + what);
  while (n > 0) {
    const size_t step = static_cast<size_t>(std::min<uint64_t>(n, buffer.size()));
    if (std::fread(buffer.data(), 1, step, in) != step) throw RuntimeError("short read of " + what);
    if (std::fwrite(buffer.data(), 1, step, out) != step)
      throw RuntimeError("cannot write the spliced GGUF (disk full?)");
    n -= step;
  }
}

}  // namespace

void splice_tensors(const std::string& start, const std::map<std::string, std::string>& from,
                    const std::string& out) {
  Source base = open_source(start);
  // The output's tensor infos: the start's, laid out again as types change (the start's own
  // offsets stay where its bytes are read from).
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
  const GgufPtr layout(gguf_init_from_file(start.c_str(), params));
  if (!layout) throw RuntimeError("cannot read the GGUF '" + start + "'");
  std::map<std::string, Source> sources;
  // Which file, and which tensor id in it, each tensor of the output comes from.
  const int64_t n = gguf_get_n_tensors(base.meta.get());
  std::vector<std::pair<Source*, int64_t>> origin(static_cast<size_t>(n), {&base, 0});
  for (int64_t i = 0; i < n; ++i) {
    const std::string name = gguf_get_tensor_name(base.meta.get(), i);
    origin[static_cast<size_t>(i)] = {&base, i};
    const auto it = from.find(name);
    if (it == from.end()) continue;
    auto [s, made] = sources.try_emplace(it->second);
    if (made) s->second = open_source(it->second);
    const int64_t j = gguf_find_tensor(s->second.meta.get(), name.c_str());
    if (j < 0 || !same_shape(base, name, s->second))
      throw RuntimeError("'" + it->second + "' holds no tensor " + name + " of " + start +
                         "'s shape");
    // Lays the tensors after it out again for the new type's size.
    gguf_set_tensor_type(layout.get(), name.c_str(), gguf_get_tensor_type(s->second.meta.get(), j));
    origin[static_cast<size_t>(i)] = {&s->second, j};
  }
  FilePtr file(std::fopen(out.c_str(), "wb"));
  if (!file) throw RuntimeError("cannot write '" + out + "'");
  std::vector<char> meta(gguf_get_meta_size(layout.get()));
  gguf_get_meta_data(layout.get(), meta.data());
  std::vector<char> buffer(1 << 22);
  if (std::fwrite(meta.data(), 1, meta.size(), file.get()) != meta.size())
    throw RuntimeError("cannot write '" + out + "' (disk full?)");
  const uint64_t align = gguf_get_alignment(layout.get());
  const std::vector<char> zeros(align, 0);
  for (const auto& [src, j] : origin) {
    const gguf_context* g = src->meta.get();
    const uint64_t size = gguf_get_tensor_size(g, j);
    copy_bytes(src->file.get(), gguf_get_data_offset(g) + gguf_get_tensor_offset(g, j), size,
               file.get(), buffer, gguf_get_tensor_name(g, j));
    const uint64_t pad = GGML_PAD(size, align) - size;
    if (pad > 0 && std::fwrite(zeros.data(), 1, pad, file.get()) != pad)
      throw RuntimeError("cannot write '" + out + "' (disk full?)");
  }
  if (std::fflush(file.get()) != 0) throw RuntimeError("cannot write '" + out + "' (disk full?)");
}

}  // namespace hd::engine
