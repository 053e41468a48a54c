#include "run/merge.h"

#include <fmt/format.h>

#include <algorithm>  // min, max
#include <list>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/stop.h"
#include "errors.h"
#include "run/chunk_loop.h"
#include "run/shard.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::run {

using nlohmann::json;

namespace {

// What merge keeps of a part between checking it and copying its rows: its record for the
// merged provenance and its chunks' hashes, not its meta. The file is closed in between, so a
// merge of thousands of parts holds one part open at a time, never the descriptor limit's
// worth, and its memory grows by a record per part, not by each part's configuration.
struct Part {
  std::string path;
  Shard shard;
  std::string kind;  // meta "kind"
  const Sharding* sharding = nullptr;
  std::vector<int> chunks;                         // the chunks it holds
  std::map<std::string, std::string> chunk_hashes;  // their meta "chunk_sha256/N" values
  std::string integrity;                           // meta "integrity_sha256"
  json record;                                     // its entry in the merged provenance's parts
};

// A part as read, before its meta is let go: what the first one read is held to.
struct ReadPart {
  Part part;
  std::map<std::string, std::string> run_meta;  // the meta every part of the run shares
  json provenance;
};

// The meta a part has of its own (the rest is the run's, the same in every part): its chunks'
// hashes, and what its kind names (a sweep's summary is of the part's chunks; the merge
// computes the run's).
bool own_meta(const std::string& key, const Sharding& sharding) {
  static const std::set<std::string> own = {"shard",          "provenance",     "status",
                                            "format",         "schema_version", "integrity_sha256"};
  return own.count(key) || key.rfind(sharding.chunk_hash_prefix, 0) == 0 ||
         std::count(sharding.own_meta.begin(), sharding.own_meta.end(), key) > 0;
}

// The chunks a part holds: as its kind reads them, or those whose hashes it keeps.
std::vector<int> stored_chunks(const store::Experiment& e, const Sharding& sharding,
                               const std::map<std::string, std::string>& meta) {
  if (sharding.stored_chunks) return sharding.stored_chunks(e, meta);
  std::vector<int> out;
  const std::string& prefix = sharding.chunk_hash_prefix;
  for (const auto& [key, value] : meta) {
    if (key.rfind(prefix, 0) == 0) out.push_back(std::stoi(key.substr(prefix.size())));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, std::string> run_meta_of(const std::map<std::string, std::string>& meta,
                                               const Sharding& sharding) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : meta) {
    if (!own_meta(key, sharding)) out[key] = value;
  }
  return out;
}

// A stop (SIGINT, SIGTERM: scancel) between parts: nothing is written, the output is as it was.
void stop_if_asked(const std::string& out) {
  if (stop_requested()) {
    throw Stopped("stopped: merge wrote nothing ('" + out + "' is as it was)");
  }
}

// The first place two JSON values differ, as "key.key: A vs B"; "" when they are equal.
std::string first_difference(const json& a, const json& b, const std::string& at) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [key, value] : a.items()) {
      const std::string here = at.empty() ? key : at + "." + key;
      if (!b.contains(key)) return here + ": absent in one";
      if (auto d = first_difference(value, b[key], here); !d.empty()) return d;
    }
    for (const auto& [key, value] : b.items()) {
      if (!a.contains(key)) return (at.empty() ? key : at + "." + key) + ": absent in one";
    }
    return "";
  }
  if (a == b) return "";
  auto shown = [](const json& v) {
    const std::string s = v.dump();
    return s.size() > 40 ? s.substr(0, 40) + "…" : s;
  };
  return at + ": " + shown(a) + " vs " + shown(b);
}

// What of an arm's facts differs with the host it ran on (devices, threads), wherever it
// stands under "arms" (a sweep's combinations too).
bool host_key(const std::string& key) { return key == "runs_on" || key == "n_threads_used"; }

// `v` without the host's keys (`keep_host` false), or with only them (true), recursively.
json split_host(const json& v, bool keep_host) {
  if (v.is_array()) {
    json out = json::array();
    for (const auto& x : v) out.push_back(split_host(x, keep_host));
    return out;
  }
  if (!v.is_object()) return keep_host ? json() : v;
  json out = json::object();
  for (const auto& [key, x] : v.items()) {
    if (host_key(key)) {
      if (keep_host) out[key] = x;
    } else if (auto y = split_host(x, keep_host); !keep_host || !y.is_null()) {
      out[key] = y;
    }
  }
  return out;
}

// What of a part's provenance its numbers depend on beyond the configuration, split into what
// must be one (builds, input, models) and what differs with the host (CPU, threads, devices).
std::pair<json, json> run_and_host(const json& p) {
  json run, host;
  for (const char* key : {"heterodyne", "llama_cpp", "text", "tokens", "points", "floor_ubatch",
                          "floor_ubatch_b", "floor_ubatch_2", "floor_ubatch_b_2"}) {
    if (p.contains(key)) run[key] = p[key];
  }
  run["text"].erase("path");  // the same text may be reached by another path on another node
  host["machine"] = p.value("machine", json::object());
  host["machine"].erase("os");
  const json arms = p.value("arms", json::object());
  run["arms"] = split_host(arms, false);
  host["arms"] = split_host(arms, true);
  return {run, host};
}

ReadPart read_part(const std::string& path, const MergeRequest& rq) {
  store::Experiment e = store::Experiment::open(path, false);
  const std::string kind = store::kind_name(e);
  const Sharding* sharding = rq.sharding_of ? rq.sharding_of(kind) : nullptr;
  if (sharding == nullptr)
    throw InputError("'" + path + "' is a " + kind + " file: this heterodyne does not merge runs "
                     "of that kind (one it does not know, or one that does not shard)");
  const auto shard = stored_shard(e);
  if (!shard) {
    throw InputError("'" + path + "' is not a part of a sharded run (heterodyne diff --shard K/N "
                     "writes one)");
  }
  json prov = json::parse(e.required_meta("provenance"), nullptr, false);
  if (!prov.is_object())
    throw InputError("'" + path + "' is damaged: its stored provenance is not a JSON object");
  if (!e.sealed()) {
    throw InputError(fmt::format("'{}' (shard {}) is not complete: finish it with heterodyne {} "
                                 "--resume {}",
                                 path, shard->name(), kind, path));
  }
  if (e.integrity_verdict() != "ok") {
    throw InputError("'" + path + "' was changed after it was sealed (its rows no longer hash as "
                     "recorded)");
  }
  const auto meta = e.all_meta();
  ReadPart r;
  r.part = {path,  *shard, kind, sharding, stored_chunks(e, *sharding, meta),
            {},    meta.at("integrity_sha256"), {}};
  for (const auto& [key, value] : meta) {
    if (key.rfind(sharding->chunk_hash_prefix, 0) == 0) r.part.chunk_hashes[key] = value;
  }
  r.run_meta = run_meta_of(meta, *sharding);
  r.provenance = std::move(prov);
  return r;
}

// One kind of part: a sweep's rows cannot join a diff's.
void require_same_kind(const ReadPart& ref, const Part& p) {
  if (p.kind != ref.part.kind) {
    throw InputError("'" + ref.part.path + "' is a " + ref.part.kind + " part and '" + p.path +
                     "' a " + p.kind + " part: parts of two kinds are not one run");
  }
}

// Every shard of one N, once each.
void require_every_shard(const std::list<Part>& parts) {
  const Part& first = parts.front();
  std::map<int, const Part*> by_index;
  for (const Part& p : parts) {
    if (p.shard.count != first.shard.count) {
      throw InputError("'" + p.path + "' is shard " + p.shard.name() + " but '" + first.path +
                       "' is shard " + first.shard.name() + ": parts of different splits");
    }
    if (auto [it, fresh] = by_index.emplace(p.shard.index, &p); !fresh) {
      throw InputError("'" + it->second->path + "' and '" + p.path + "' are both shard " +
                       p.shard.name() + ": their chunks overlap");
    }
  }
  std::string missing;
  int n_missing = 0;
  for (int i = 0; i < first.shard.count; ++i) {
    if (by_index.count(i)) continue;
    if (++n_missing <= 10) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  }
  if (n_missing > 0) {
    throw InputError(fmt::format("shard{} {}{} of {} {} missing: merge needs every part", 
                                 n_missing > 1 ? "s" : "", missing, n_missing > 10 ? ", …" : "",
                                 first.shard.count, n_missing > 1 ? "are" : "is"));
  }
}

// `p` fits `ref`: one run, made alike. Returns how its host differs ("" when it does not).
std::string require_fits(const ReadPart& ref_read, const ReadPart& p_read, bool allow_mixed_hosts) {
  const Part &ref = ref_read.part, &p = p_read.part;
  const auto &a = ref_read.run_meta, &b = p_read.run_meta;
  for (const auto& [key, value] : a) {
    if (!b.count(key) || b.at(key) != value) {
      std::string d = key;
      const json ja = json::parse(value, nullptr, false);
      const json jb = b.count(key) ? json::parse(b.at(key), nullptr, false) : json();
      if (!ja.is_discarded() && !jb.is_discarded()) d = first_difference(ja, jb, key);
      throw InputError("'" + p.path + "' is not of the run '" + ref.path + "' is (" + d + ")");
    }
  }
  if (b.size() != a.size()) {
    throw InputError("'" + p.path + "' holds meta that '" + ref.path + "' does not");
  }
  const auto [run_a, host_a] = run_and_host(ref_read.provenance);
  const auto [run_b, host_b] = run_and_host(p_read.provenance);
  if (auto d = first_difference(run_a, run_b, ""); !d.empty()) {
    throw InputError("'" + p.path + "' was not made as '" + ref.path + "' was (" + d + ")");
  }
  const std::string d = first_difference(host_a, host_b, "");
  if (!d.empty() && !allow_mixed_hosts) {
    throw InputError("'" + p.path + "' ran on another kind of host than '" + ref.path + "' (" + d +
                     "): their numbers can differ (AVX2 against AVX-512 was measured at KL 3e-6); "
                     "--allow-mixed-hosts merges them anyway, and records it");
  }
  return d;
}

// Each part holds exactly its shard's chunks.
void require_own_chunks(const Part& p, int n_chunks) {
  std::set<int> want;
  for (int c = 0; c < n_chunks; ++c) {
    if (p.shard.owns(c)) want.insert(c);
  }
  const auto& have = p.chunks;
  for (int c : have) {
    if (!want.count(c)) {
      throw InputError(fmt::format("'{}' holds chunk {}, which is not shard {}'s", p.path, c,
                                   p.shard.name()));
    }
  }
  if (have.size() != want.size()) {
    throw InputError(fmt::format("'{}' holds {} of shard {}'s {} chunks", p.path, have.size(),
                                 p.shard.name(), want.size()));
  }
}

// Its entry in the merged provenance's "parts". Its machine is left out where it is the run's
// (the first part's, the merged provenance's own "machine"): a record is then about 1 KB, and
// the provenance of 20,000 parts stays under the bound a reader takes (store::kMaxFieldBytes).
json part_record(const ReadPart& r, const json& run_machine) {
  const Part& p = r.part;
  json rec = {{"path", p.path},
              {"shard", {{"index", p.shard.index}, {"count", p.shard.count}}},
              {"chunks", p.chunks.size()},
              {"integrity_sha256", p.integrity}};
  for (const char* key : {"placement", "machine", "started_at", "finished_at", "resumed",
                          "command_line", "prefix_reuse"}) {
    if (!r.provenance.contains(key)) continue;
    if (std::string_view(key) == "machine" && r.provenance[key] == run_machine) continue;
    rec[key] = r.provenance[key];
  }
  return rec;
}

json merged_provenance(const ReadPart& ref, const std::list<Part>& parts, const MergeRequest& rq,
                       const std::vector<std::string>& mixed) {
  json p = ref.provenance;
  for (const char* key : {"shard", "placement", "resumed"}) p.erase(key);
  std::string started, finished;
  p["parts"] = json::array();
  for (const Part& part : parts) {
    const std::string s = part.record.value("started_at", ""), f = part.record.value("finished_at", "");
    if (!s.empty() && (started.empty() || s < started)) started = s;
    finished = std::max(finished, f);
    p["parts"].push_back(part.record);
  }
  p["started_at"] = started;
  p["finished_at"] = finished;
  p["command_line"] = rq.command_line;
  p["merged"] = {{"at", now_utc()},
                 {"parts", parts.size()},
                 {"allow_mixed_hosts", rq.allow_mixed_hosts},
                 {"mixed_hosts", mixed}};
  return p;
}

}  // namespace

MergeResult merge_parts(const MergeRequest& rq, const ProgressFn& progress) {
  if (rq.parts.empty()) throw InputError("merge needs the parts to merge");
  store::Experiment::check_creatable(rq.out, rq.replace, rq.parts, false);
  // The first part read is the one the others are held to; each is checked as it is read,
  // and only its record and chunk hashes are kept.
  std::optional<ReadPart> ref;
  std::list<Part> parts;
  MergeResult result;
  for (const auto& path : rq.parts) {
    stop_if_asked(rq.out);
    ReadPart r = read_part(path, rq);
    if (!ref) ref = r;
    require_same_kind(*ref, r.part);
    if (auto d = require_fits(*ref, r, rq.allow_mixed_hosts); !d.empty()) {
      result.mixed.push_back("'" + path + "': " + d);
    }
    r.part.record = part_record(r, ref->provenance.value("machine", json()));
    parts.push_back(std::move(r.part));
  }
  require_every_shard(parts);
  parts.sort([](const Part& x, const Part& y) { return x.shard.index < y.shard.index; });
  const int n_chunks = ref->provenance.at("tokens").at("n_chunks").get<int>();
  for (const Part& p : parts) require_own_chunks(p, n_chunks);
  const std::string provenance = merged_provenance(*ref, parts, rq, result.mixed).dump();
  if (provenance.size() > static_cast<size_t>(store::kMaxFieldBytes)) {
    throw InputError(fmt::format(
        "the merged provenance of {} parts would be {:.1f} MiB, more than the {} MiB a reader "
        "takes from one field: merge fewer, larger shards",
        parts.size(), static_cast<double>(provenance.size()) / 1048576.0,
        store::kMaxFieldBytes >> 20));
  }
  stop_if_asked(rq.out);
  // Destroyed unpublished (a stop, a failure), the output's part is removed.
  store::Experiment out = store::Experiment::create(rq.out, rq.replace, rq.parts, false);
  for (const auto& [key, value] : ref->run_meta) out.set_meta(key, value);
  out.set_meta("provenance", provenance);
  for (const Part& p : parts) {
    stop_if_asked(rq.out);
    const store::Experiment e = store::Experiment::open(p.path, false);
    if (e.meta("integrity_sha256") != p.integrity) {
      throw RuntimeError("'" + p.path + "' was replaced while merge ran; '" + rq.out +
                         "' not written");
    }
    for (const auto& [key, value] : p.chunk_hashes) out.set_meta(key, value);
    out.append_rows(e);
    progress(fmt::format("part {} ({}): {} chunks", p.shard.name(), p.path, p.chunks.size()));
  }
  stop_if_asked(rq.out);
  // Every chunk's rows hash in the merged file as they did in their part: nothing was lost or
  // changed on the way.
  if (const auto altered = ref->part.sharding->finish(out, n_chunks)) {
    throw RuntimeError("merging changed the rows: " + *altered + "; '" + rq.out + "' not written");
  }
  out.seal();
  out.publish();
  result.parts = static_cast<int>(parts.size());
  result.chunks = n_chunks;
  result.rows_sha256 = out.rows_sha256();
  return result;
}

}  // namespace hd::run
