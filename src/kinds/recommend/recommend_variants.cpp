#include "kinds/recommend/recommend_variants.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "common/sha256.h"
#include "engine/gguf_splice.h"
#include "engine/quantize.h"
#include "errors.h"

namespace hd::run {
namespace fs = std::filesystem;

std::vector<std::string> variant_file_names() {
  std::vector<std::string> names = {"variant.gguf", "start.gguf", "proof.gguf"};
  // Every type heterodyne offers: a killed run's --types need not be this run's.
  const std::string all = engine::tensor_type_names();
  for (size_t at = 0; at < all.size();) {
    const size_t comma = std::min(all.find(", ", at), all.size());
    names.push_back("types-" + all.substr(at, comma - at) + ".gguf");
    at = comma + 2;
  }
  return names;
}

VariantMaker::VariantMaker(const RecipePlan& plan, std::string model, std::string base_type,
                           const std::vector<std::string>& types, const std::string& dir,
                           bool reuse, const ProgressFn& progress)
    : plan_(plan), model_(std::move(model)), base_type_(std::move(base_type)) {
  if (!reuse) {
    why_not_ = "--no-reuse";
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t bytes = 0;
  try {
    for (const std::string& type : types) {
      auto file =
          std::make_unique<OutputFile>((fs::path(dir) / ("types-" + type + ".gguf")).string(),
                                       OutputPolicy(true));  // never kept
      std::map<std::string, std::string> all = plan_.base_types;
      for (auto& [name, t] : all) {
        if (plan_.tensors.count(name)) t = type;
      }
      quantize(all, file->temporary());
      bytes += fs::file_size(file->temporary());
      type_files_[type] = std::move(file);
    }
  } catch (const RuntimeError& e) {  // a full disk: one model per type is more than a variant
    type_files_.clear();
    why_not_ = std::string("the type files could not be made: ") + e.what();
    progress("variants: each quantized whole: " + why_not_);
    return;
  }
  // The proof: the first group and type that moves a tensor from its base type, both ways.
  std::map<std::string, std::string> moved = plan_.base_types;
  std::string what;
  for (size_t g = 0; g < plan_.groups.size() && what.empty(); ++g) {
    for (size_t t = 0; t < types.size() && what.empty(); ++t) {
      for (const auto& name : plan_.groups[g].tensors) {
        if (plan_.base_types.at(name) != types[t]) what = plan_.groups[g].name + " at " + types[t];
      }
      if (what.empty()) continue;
      for (const auto& name : plan_.groups[g].tensors) moved[name] = types[t];
    }
  }
  if (what.empty()) {
    why_not_ = "no candidate type moves any tensor from the base";
    type_files_.clear();
  } else {
    OutputFile spliced((fs::path(dir) / "variant.gguf").string(), OutputPolicy(true));
    OutputFile whole((fs::path(dir) / "proof.gguf").string(), OutputPolicy(true));
    try {
      make(plan_.base_path, plan_.base_types, moved, spliced.temporary());
      quantize(moved, whole.temporary());
      if (sha256_file(spliced.temporary()) != sha256_file(whole.temporary()))
        why_not_ = what + " spliced is not the bytes llama.cpp's quantizer writes for it";
    } catch (const RuntimeError& e) {
      why_not_ = what + " could not be spliced: " + e.what();
    }
    if (!why_not_.empty()) type_files_.clear();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress(why_not_.empty()
               ? fmt::format("variants: {} type files ({:.1f} MB) quantized in {:.1f} s; each "
                             "variant is its start with one group's tensors from them (proven: "
                             "{} spliced is llama.cpp's file byte for byte)",
                             types.size(), static_cast<double>(bytes) / 1e6, s, what)
               : "variants: each quantized whole: " + why_not_);
}

void VariantMaker::quantize(const std::map<std::string, std::string>& types,
                            const std::string& out) const {
  engine::quantize_with_overrides(model_, out, base_type_, pinned_overrides(plan_, types), 0,
                                  OutputPolicy(true));
}

void VariantMaker::make(const std::string& from,
                        const std::map<std::string, std::string>& from_types,
                        const std::map<std::string, std::string>& types,
                        const std::string& out) const {
  if (!splices()) return quantize(types, out);
  std::map<std::string, std::string> sources;  // tensor -> the file holding it at its type
  for (const auto& [name, type] : types) {
    if (!plan_.tensors.count(name) || from_types.at(name) == type) continue;
    if (plan_.base_types.at(name) == type) {
      sources[name] = plan_.base_path;
    } else if (const auto it = type_files_.find(type); it != type_files_.end()) {
      sources[name] = it->second->temporary();
    } else {
      return quantize(types, out);  // a type no file holds (not a candidate): made whole
    }
  }
  engine::splice_tensors(from, sources, out);
}

}  // namespace hd::run
