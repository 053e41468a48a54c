// A GGUF made from another by swapping some tensors for the same tensors of other files: the
// variants `recommend` measures differ from their start in one group of tensors, and llama.cpp's
// quantizer would quantize every tensor of the model again to make each one. Each tensor a
// pinned quantization writes depends only on its own values and type (ggml_quantize_chunk, row
// by row, no importance matrix), so the start's bytes with the group's bytes from a file that
// holds the group at the new type are the file llama-quantize writes. recommend proves that on
// one variant of its model before it relies on it (kinds/recommend/recommend_variants.h), and
// its tests compare every figure with models quantized whole.
#pragma once
#include <map>
#include <string>

namespace hd::engine {

// Writes `start` to `out` with every tensor named in `from` (tensor -> file) given the type and
// bytes it has in that file: the start's metadata and tensor order, offsets laid out again,
// each tensor's bytes padded with zeros to the alignment, as llama-quantize lays a file out.
// Throws RuntimeError when a file lacks a tensor or holds it in another shape.
void splice_tensors(const std::string& start, const std::map<std::string, std::string>& from,
                    const std::string& out);

}  // namespace hd::engine
