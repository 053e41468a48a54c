#include "engine/worker_arm.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>

#include "engine/worker_build.h"
#include "engine/worker_process.h"
#include "engine/worker_protocol.h"
#include "errors.h"

namespace hd::engine {

static int timeout_ms_from_env() {
  const char* env = std::getenv("HETERODYNE_WORKER_TIMEOUT");
  if (env == nullptr || *env == '\0') return 600000;
  char* end = nullptr;
  const double s = std::strtod(env, &end);
  if (end == env || *end != '\0' || !(s > 0) || s > 86400) {
    throw InputError(
        std::string("HETERODYNE_WORKER_TIMEOUT must be seconds between 0 and 86400, not '") +
        env + "'");
  }
  return static_cast<int>(std::lround(s * 1000));
}

// One worker process and the requests it answers, one at a time.
class WorkerConnection {
 public:
  explicit WorkerConnection(const std::string& exe)
      : exe_(exe), timeout_ms_(timeout_ms_from_env()),
        proc_(std::make_unique<WorkerProcess>(exe, std::vector<std::string>{})) {
    const wire::Hello hello =
        wire::decode_hello(exchange(wire::encode(wire::Hello{}), "its start", "the worker " + exe));
    if (hello.version != wire::kVersion) {
      throw RuntimeError("the worker " + exe + " speaks worker protocol " +
                         std::to_string(hello.version) + ", this heterodyne speaks " +
                         std::to_string(wire::kVersion) + ": rebuild it");
    }
    build_ = nlohmann::json::parse(hello.facts_json);
  }

  const std::string& exe() const { return exe_; }
  const nlohmann::json& build() const { return build_; }
  bool dead() const { return dead_; }

  // Sends `m`, waits for the answer; a death, a timeout or an Error reply becomes an exception
  // saying what `who` was doing (`during`).
  wire::Message exchange(const wire::Message& m, const std::string& during, const std::string& who) {
    std::lock_guard lock(mutex_);
    if (dead_) throw RuntimeError(who + " is no longer running (it failed earlier)");
    std::optional<wire::Message> reply;
    WorkerProcess::Ending end;
    try {
      wire::send_message(proc_->fd(), m);
      reply = wire::receive_message(proc_->fd(), timeout_ms_);
      if (!reply) end = proc_->how_it_ended();
    } catch (const wire::TimeoutError&) {
      proc_->kill();
      end.how = "gave no answer in " + std::to_string(timeout_ms_ / 1000) +
                " s (HETERODYNE_WORKER_TIMEOUT) and was stopped";
    } catch (const RuntimeError&) {
      end = proc_->how_it_ended();
    }
    if (!end.how.empty()) {
      dead_ = true;
      std::string msg = who + " " + end.how + " during " + during;
      if (!end.last_words.empty()) msg += "; its last words: " + end.last_words;
      throw RuntimeError(msg);
    }
    if (reply->type == wire::Type::kError) {
      const wire::Error e = wire::decode_error(*reply);
      if (e.input) throw InputError(e.message);
      throw RuntimeError(e.message);
    }
    return std::move(*reply);
  }

  void close_arm(uint32_t id) {
    std::lock_guard lock(mutex_);
    if (dead_) return;
    try {
      wire::send_message(proc_->fd(), wire::encode(wire::Close{id}));
    } catch (const std::exception&) {
      dead_ = true;  // noticed by the next request, which says how it ended
    }
  }

 private:
  std::string exe_;
  int timeout_ms_;
  std::unique_ptr<WorkerProcess> proc_;
  nlohmann::json build_;
  std::mutex mutex_;
  bool dead_ = false;
};

// The live worker for an executable and a set of RPC servers, or a new one.
static std::shared_ptr<WorkerConnection> connection_for(const std::string& exe,
                                                        const std::vector<std::string>& rpc) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<WorkerConnection>> live;
  std::string key = exe;
  for (const auto& e : rpc) key.append("|").append(e);
  std::lock_guard lock(mutex);
  if (auto c = live[key].lock(); c && !c->dead()) return c;
  auto c = std::make_shared<WorkerConnection>(exe);
  live[key] = c;
  return c;
}

WorkerArm::WorkerArm(const ModelInfo& host, const ArmSettings& s, int n_ctx) {
  std::string build = "this binary's";
  if (!s.llama_build.empty()) build = "'" + s.llama_build + "'";
  who_ = "the worker running '" + s.model + "' (llama.cpp build " + build;
  if (!s.rpc.empty()) {
    who_ += ", layers on RPC servers";
    for (const auto& e : s.rpc) who_.append(" ").append(e);
  }
  who_ += ")";
  conn_ = connection_for(worker_executable(s.llama_build), s.rpc);
  const wire::Open open{s, n_ctx};
  const wire::Opened opened =
      wire::decode_opened(conn_->exchange(wire::encode(open), "loading the model", who_));
  id_ = opened.arm;
  n_threads_ = opened.n_threads;
  const auto info = nlohmann::json::parse(opened.model_info_json);
  n_vocab_ = info.at("n_vocab").get<int64_t>();
  // Another build must read the same file the same way, or nothing pairs row by row.
  if (info.at("n_layer") != host.n_layer || info.at("n_embd") != host.n_embd ||
      n_vocab_ != host.n_vocab) {
    throw RuntimeError(who_ + " reads '" + s.model + "' as " + info.at("n_layer").dump() +
                       " layers × " + info.at("n_embd").dump() + ", vocabulary " +
                       std::to_string(n_vocab_) + "; this binary reads " +
                       std::to_string(host.n_layer) + " × " + std::to_string(host.n_embd) +
                       ", " + std::to_string(host.n_vocab));
  }
  // {"placement", "flash_attn" where llama.cpp said} from this source's worker; the placement
  // alone from a worker built before it.
  const auto placed = nlohmann::json::parse(opened.placement_json);
  const bool both = placed.is_object() && placed.contains("placement") && placed.size() <= 2 &&
                    (placed.size() == 1 || placed.contains("flash_attn"));
  facts_ = {{"process", "worker"},
            {"worker", conn_->exe()},
            {"llama_build", s.llama_build.empty() ? "this binary's" : s.llama_build},
            {"build", conn_->build()},
            {"placement", both ? placed.at("placement") : placed}};
  if (both && placed.contains("flash_attn")) facts_["flash_attn"] = placed.at("flash_attn");
}

WorkerArm::~WorkerArm() { conn_->close_arm(id_); }

void WorkerArm::decode(const DecodeInput& in, Hook* hook, std::vector<float>& logits) {
  if (hook != nullptr && hook->watches())
    throw RuntimeError("a worker's arm cannot hand its rows to a watcher in this process");
  wire::Decode d;
  d.arm = id_;
  d.n = in.n;
  d.first_output = in.first_output;
  d.pos0 = in.pos0;
  d.tokens.assign(in.tokens.begin(), in.tokens.end());
  d.rows.assign(in.rows.begin(), in.rows.end());
  d.start = in.start;
  if (hook != nullptr) {
    d.stop_after = hook->stop_point();
    d.captures = hook->captures();
    for (const auto& [point, patch] : hook->patches()) {
      d.patches.push_back({point, patch->row_begin, patch->rows});
    }
    const auto& e = hook->row_rule_exceptions();
    d.row_rule_exceptions.assign(e.begin(), e.end());
  }
  const std::string during = in.pos0 > 0
                                 ? "a decode step at position " + std::to_string(in.pos0)
                                 : "a decode of " + std::to_string(in.n) + " tokens";
  wire::Decoded r = wire::decode_decoded(conn_->exchange(wire::encode(d), during, who_));
  const size_t want = !d.stop_after.empty()
                         ? 0
                         : static_cast<size_t>(in.n - in.first_output) * static_cast<size_t>(n_vocab_);
  if (r.logits.size() != want || (hook != nullptr && r.captured.size() != d.captures.size())) {
    throw RuntimeError(who_ + " answered " + during + " with " + std::to_string(r.logits.size()) +
                       " logits and " + std::to_string(r.captured.size()) +
                       " captured points, not what was asked for");
  }
  logits = std::move(r.logits);
  if (hook != nullptr) {
    for (auto& c : r.captured) hook->receive(c.point, c.width, c.first_row, std::move(c.data));
  }
}

}  // namespace hd::engine
