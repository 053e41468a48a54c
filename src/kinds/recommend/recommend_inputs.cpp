#include "kinds/recommend/recommend_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "engine/gguf_file.h"
#include "engine/quantize.h"
#include "errors.h"
#include "run/provenance.h"

namespace hd::run {
namespace fs = std::filesystem;

void check_config(RecommendConfig& c) {
  const auto stock = engine::stock_file_types();
  c.base = engine::canonical_quant_type(c.base);
  if (std::find(stock.begin(), stock.end(), c.base) == stock.end())
    throw InputError("--base " + c.base + " quantizes nothing: give a quantized file type");
  if (c.types.empty()) throw InputError("--types needs at least one tensor type");
  for (auto& t : c.types) t = engine::canonical_tensor_type(t);
  std::vector<std::string> seen;
  for (const auto& t : c.types) {
    if (std::find(seen.begin(), seen.end(), t) != seen.end())
      throw InputError("--types names " + t + " twice");
    seen.push_back(t);
  }
  if ((c.target_bytes > 0 || !c.target_size.empty()) == !std::isnan(c.target_kl))
    throw InputError("recommend needs one target: --target-size or --target-kl");
  if (!std::isnan(c.target_kl) && !(c.target_kl > 0 && std::isfinite(c.target_kl)))
    throw InputError("--target-kl must be a positive number");
  if (c.chunk < 2) throw InputError("--chunk must be at least 2 tokens");
  if (c.calibration_chunks < 1 || c.held_out_chunks < 1)
    throw InputError("--calibration-chunks and --held-out-chunks must be at least 1");
  if (c.layers_per_group < 1) throw InputError("--layers-per-group must be at least 1");
  if (c.rounds < 1 || c.rounds > 8) throw InputError("--rounds must be 1 to 8");
  for (const InputPath* p : {&c.calibration, &c.held_out}) {
    if (p->path == "-")
      throw InputError("recommend reads its texts again to resume and verify: give files, not '-'");
  }
  const auto ids = file_ids({c.calibration.path, c.held_out.path});
  if (ids.size() == 2 && ids[0] == ids[1])
    throw InputError(
        "the held-out text is the calibration text: the proof must be measured on "
        "text the choice never saw");
  const std::string weights = engine::gguf_check(c.model).weight_type;
  if (weights != "f32" && weights != "f16" && weights != "bf16")
    throw InputError("'" + c.model + "' is already quantized (its weights are " + weights +
                     "): recommend needs the F32, F16 or BF16 model");
}

void resolve_target(RecommendConfig& c) {
  if (c.target_size.empty() || c.target_bytes > 0) return;
  if (engine::is_quant_type(c.target_size)) {
    c.target_size = engine::canonical_quant_type(c.target_size);
    c.target_bytes = fs::file_size(engine::ensure_quantized(c.model, c.target_size, 0));
    return;
  }
  const auto b = parse_size(c.target_size);
  if (!b)
    throw InputError("--target-size '" + c.target_size +
                     "' is not a size (2.1GiB, 800MB, 123456) nor a file type (Q4_K_M)");
  c.target_bytes = *b;
}

Loaded load_inputs(const RecommendConfig& c, const nlohmann::json* prov,
                   const ProgressFn& progress) {
  Loaded l;
  if (prov) {
    l.calibration = read_stored_input(c.calibration, *prov, {}, "heterodyne recommend");
    l.held_out =
        read_stored_input(c.held_out, {{"text", prov->at("held_out")}}, {}, "heterodyne recommend");
  } else {
    l.calibration = read_input(c.calibration, false);
    l.held_out = read_input(c.held_out, false);
  }
  l.model = engine::model_load(c.model);
  const auto note = [&](const std::string& s) { progress(s); };
  l.calibration_chunks =
      input_chunks(*l.model, l.calibration, false, c.chunk, c.calibration_chunks, note);
  l.held_out_chunks = input_chunks(*l.model, l.held_out, false, c.chunk, c.held_out_chunks, note);
  // The rank check scores every variant on as many held-out chunks as the choice reads.
  l.rank_chunks.assign(l.held_out_chunks.begin(),
                       l.held_out_chunks.begin() +
                           std::min<ptrdiff_t>(static_cast<ptrdiff_t>(l.calibration_chunks.size()),
                                               static_cast<ptrdiff_t>(l.held_out_chunks.size())));
  if (prov && (tokens_record(l.calibration_chunks) != prov->at("tokens") ||
               tokens_record(l.held_out_chunks) != prov->at("held_out").at("tokens")))
    throw InputError("the texts tokenize differently than when the recommendation began");
  return l;
}

void check_target_fits(const RecommendConfig& c, const RecipePlan& plan) {
  if (c.target_bytes == 0) return;
  uint64_t least = plan.fixed_bytes;
  const Start base = start_at(plan, plan.base_types);
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    uint64_t lo = base.bytes[g];
    for (uint64_t b : plan.bytes[g]) lo = b > 0 ? std::min(lo, b) : lo;
    least += lo;
  }
  if (c.target_bytes < least)
    throw InputError(
        fmt::format("--target-size {} ({} bytes) is smaller than any recipe of "
                    "these types: the smallest takes {} bytes",
                    c.target_size, c.target_bytes, least));
}

}  // namespace hd::run
