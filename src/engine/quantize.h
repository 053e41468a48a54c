// Quantized variants of a model, made in-process by llama.cpp's own quantizer and cached.
#pragma once
#include <string>
#include <vector>

#include "common/output_file.h"

namespace hd::engine {

// The accepted type names, comma-separated, in llama-quantize's spelling: "F32, F16, ...".
// Types that need an importance matrix (IQ1/IQ2/IQ3_XXS, Q2_K_S) are not offered.
std::string quantize_type_names();

// The quantized file types (no F32, F16, BF16; no aliases), from most bits to fewest: the
// stock types a recipe is compared with.
std::vector<std::string> stock_file_types();

// Whether `type` names one of those types (case-insensitive; Q4_K, Q5_K, Q3_K are aliases).
bool is_quant_type(const std::string& type);

// The canonical spelling of an accepted type ("q4_k" -> "Q4_K_M"); InputError if unknown.
std::string canonical_quant_type(const std::string& type);

// Quantizes the F32/F16/BF16 GGUF `in` to `type`, written atomically to `out` (temporary file,
// then rename). n_threads <= 0 lets llama.cpp use every core. Unknown type or missing input:
// InputError; llama.cpp refusing the model: RuntimeError.
// `keep_output` leaves output.weight as it is (llama-quantize --leave-output-tensor), so both
// models share the output head.
// `policy` says whether an existing `out` may be replaced; `in` is always among its inputs.
void quantize_model(const std::string& in, const std::string& out, const std::string& type,
                    int n_threads, bool keep_output = false, OutputPolicy policy = {});

// One `llama-quantize --tensor-type PATTERN=TYPE`: every tensor whose name the ECMAScript
// regex `pattern` matches anywhere (std::regex_search) takes ggml type `type` instead of what
// the file type would give it. At the pinned commit (src/llama-quant.cpp) the first pattern
// that matches a tensor decides it, an override applies only where the file type quantizes
// the tensor, and a type whose blocks do not divide the tensor's rows silently falls back to
// another: read the types back (engine/gguf_tensors.h) to know what took.
struct TensorTypeOverride {
  std::string pattern;
  std::string type;  // canonical_tensor_type's spelling
};

// The per-tensor types heterodyne offers for overrides, comma-separated ("Q2_K, Q3_K, ...").
std::string tensor_type_names();
// The canonical spelling of a per-tensor type ("q4_k" -> "Q4_K"); InputError if unknown, with a
// hint where a file type was given ("Q4_K_M is a file type: a tensor type is Q4_K").
std::string canonical_tensor_type(const std::string& type);

// quantize_model to file type `type` with `overrides` in order. Always quantizes output.weight
// as the file type says (no --leave-output-tensor).
void quantize_with_overrides(const std::string& in, const std::string& out,
                             const std::string& type,
                             const std::vector<TensorTypeOverride>& overrides, int n_threads,
                             OutputPolicy policy = {});

// Where the `type` variant of `src` is cached:
//   ${HETERODYNE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/heterodyne}/quantized/<sha16>-<TYPE>.gguf
// with <sha16> the first 16 hex digits of the SHA-256 of src's bytes and TYPE canonical.
std::string quantized_cache_path(const std::string& src, const std::string& type);

// The cached `type` variant of `src`, made first if it is not there yet, or made again when its
// bytes do not hash to what was recorded when it was made. Returns its path.
std::string ensure_quantized(const std::string& src, const std::string& type, int n_threads);

// Writes `src` without its first `n_layers` layers to `dst` (llama_model_quantize's
// prune_layers, tensors copied unchanged): a model of another shape, for tests of refusals.
void write_without_first_layers(const std::string& src, const std::string& dst, int n_layers);

}  // namespace hd::engine
