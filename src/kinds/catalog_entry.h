// One experiment as serve's list (GET /api/experiments) and the web UI's experiments table have
// it: what every kind says of its file (kinds/kind.h catalog_entry), and what serve adds (the
// name, the time of its last write). A typed record: its field table below is its JSON and
// web/src/records.ts's ExperimentInfo alike (common/record.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "common/record.h"

namespace hd::kinds {

struct CatalogEntry {
  std::string name;  // the file's stem (serve)
  std::string kind, status;
  bool positions = false;
  std::string a, b;  // the models (B: its quantization type where it was made by one)
  // A run of two arms over per-position rows (a diff): its headline numbers.
  std::optional<double> kl_mean, kl_ci95, top1_change_rate, ppl_a, ppl_b, floor_kl_mean;
  std::optional<int64_t> kl_infinite_positions, n_chunks;
  std::optional<double> b_size, b_bpw;
  std::optional<std::string> shard;
  std::optional<int64_t> merged_parts;
  int64_t modified = 0;  // serve: seconds since the epoch of the file's last write
};

}  // namespace hd::kinds

namespace hd {

template <>
struct RecordTable<kinds::CatalogEntry> {
  using E = kinds::CatalogEntry;
  static constexpr const char* name = "ExperimentInfo";
  static constexpr const char* doc =
      "One experiment file in serve's list (GET /api/experiments): src/kinds/catalog_entry.h.";
  static constexpr auto fields = std::make_tuple(
      record_field("name", &E::name, "the file's name without .hdy"),
      record_field("kind", &E::kind, "the experiment kind (src/kinds/), its command's name"),
      record_field("status", &E::status,
                   "running (a process writes it), stopped (none does: resumable), complete, or "
                   "unknown"),
      record_field("positions", &E::positions,
                   "its file holds per-position rows (a diff): the numbers below are its, and it "
                   "can be compared"),
      record_field("a", &E::a, "arm A's model, as serve shows paths"),
      record_field("b", &E::b, "arm B's model, or the quantization type B was made with"),
      record_field("kl_mean", &E::kl_mean,
                   "mean KL(A || B) over the positions where it is finite"),
      record_field("kl_ci95", &E::kl_ci95),
      record_field("kl_infinite_positions", &E::kl_infinite_positions,
                   "positions where B masks a token A gives mass (KL +inf), left out of the mean"),
      record_field("top1_change_rate", &E::top1_change_rate),
      record_field("ppl_a", &E::ppl_a),
      record_field("ppl_b", &E::ppl_b),
      record_field("floor_kl_mean", &E::floor_kl_mean, "the floor's mean KL, what kl_mean is read against"),
      record_field("n_chunks", &E::n_chunks),
      record_field("b_size", &E::b_size, "B's file size in bytes"),
      record_field("b_bpw", &E::b_bpw, "B's file size in bits over its parameter count"),
      record_field("shard", &E::shard, "a part of a sharded run: \"K/N\""),
      record_field("merged_parts", &E::merged_parts, "how many parts a merged file joined"),
      record_field("modified", &E::modified,
                   "the file's last write, in seconds since the epoch"));
};

}  // namespace hd
