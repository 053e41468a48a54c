// heterodyne-worker: one arm in its own process, linked against one llama.cpp build.
//
// It speaks the worker protocol (engine/worker_protocol.h) on stdin/stdout, which the
// orchestrator connects to a socket pair: Hello, Open (load the model, make the context), then
// any number of Decode requests, until the connection closes. Whatever llama.cpp writes to
// stdout is sent to stderr instead, so the protocol stream stays clean.
//
// HETERODYNE_WORKER_FAULT=abort-at-decode:N | hang-at-decode:N | exit-at-decode:N makes the N-th
// decode fail that way: the tests' stand-in for a crash inside llama.cpp or a lost machine.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "build_info.h"
#include "engine/local_arm.h"
#include "engine/system.h"
#include "engine/worker_protocol.h"
#include "errors.h"

namespace wire = hd::engine::wire;

namespace {

struct Fault {
  std::string kind;
  long at = 0;
};

Fault fault_from_env() {
  const char* env = std::getenv("HETERODYNE_WORKER_FAULT");
  if (env == nullptr) return {};
  const std::string s = env;
  const auto colon = s.find(":");
  if (colon == std::string::npos) return {};
  return {s.substr(0, colon), std::strtol(s.c_str() + colon + 1, nullptr, 10)};
}

void inject(const Fault& f, long decode_no) {
  if (f.at != decode_no) return;
  if (f.kind == "abort-at-decode") {
    std::fputs("heterodyne-worker: injected fault: abort\n", stderr);
    std::abort();
  }
  if (f.kind == "exit-at-decode") std::_Exit(3);
  if (f.kind == "hang-at-decode") {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
}

nlohmann::json info_json(const hd::engine::ModelInfo& i) {
  return {{"architecture", i.architecture}, {"description", i.description},
          {"n_layer", i.n_layer},           {"n_embd", i.n_embd},
          {"n_vocab", i.n_vocab},           {"n_params", i.n_params}};
}

// False when the orchestrator is gone: nobody is left to tell.
bool answer_error(int fd, bool input, const std::string& message) {
  try {
    wire::send_message(fd, wire::encode(wire::Error{input, message}));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// What the worker holds between messages.
struct Worker {
  Fault fault;
  // Every arm the orchestrator opened here; arms of one file and placement share its weights
  // (load_weights), so RPC servers hold each model once.
  std::map<uint32_t, std::unique_ptr<hd::engine::LocalArm>> arms;
  uint32_t next_id = 1;
  std::vector<float> logits;
  long decodes = 0;
};

// Hello: this build's facts, or none when the orchestrator speaks another protocol version.
void answer_hello(int fd, const wire::Message& m) {
  const wire::Hello h = wire::decode_hello(m);
  wire::Hello reply;
  if (h.version == wire::kVersion) {
    reply.facts_json = nlohmann::json{
        {"llama_commit", hd::build::kLlamaCommit},
        {"llama_flags", hd::build::kLlamaFlags},
        {"cpu", hd::engine::cpu_model()},
        {"cpu_features", hd::engine::cpu_features()},
        {"pid",
         ::getpid()}}.dump();
  }
  wire::send_message(fd, wire::encode(reply));
}

// Open: load the model, make the arm, answer its id and facts.
void answer_open(int fd, const wire::Message& m, Worker& w) {
  const wire::Open o = wire::decode_open(m);
  const hd::engine::ArmSettings& s = o.settings;  // llama_build: "" (this is that build)
  auto model = hd::engine::model_load(s.model);
  hd::engine::check_settings(s, model->info(), o.n_ctx);
  auto& arm = w.arms[w.next_id];
  arm = std::make_unique<hd::engine::LocalArm>(model, s, o.n_ctx);
  wire::Opened reply;
  reply.arm = w.next_id++;
  reply.model_info_json = info_json(model->info()).dump();
  reply.n_threads = arm->n_threads();
  // The placement and what llama.cpp resolved flash attention to (WorkerArm reads both).
  const nlohmann::json facts = arm->facts();
  nlohmann::json placed = {{"placement", facts.at("placement")}};
  if (facts.contains("flash_attn")) placed["flash_attn"] = facts["flash_attn"];
  reply.placement_json = placed.dump();
  wire::send_message(fd, wire::encode(reply));
}

// Decode: one batch through an open arm, with its captures and patches.
void answer_decode(int fd, const wire::Message& m, Worker& w) {
  const wire::Decode d = wire::decode_decode(m);
  auto it = w.arms.find(d.arm);
  if (it == w.arms.end()) throw hd::RuntimeError("worker protocol: Decode for an arm not open");
  hd::engine::LocalArm* arm = it->second.get();
  inject(w.fault, ++w.decodes);
  hd::engine::Hook hook;
  for (const auto& c : d.captures) hook.capture(c);
  for (const auto& p : d.patches) hook.overwrite(p.point, p.row_begin, p.rows);
  for (const auto& e : d.row_rule_exceptions) hook.except_from_row_rule(e);
  if (!d.stop_after.empty()) hook.stop_after(d.stop_after);
  hd::engine::DecodeInput in{d.tokens, d.rows, d.n, d.first_output, d.pos0, d.start};
  arm->decode(in, &hook, w.logits);
  wire::Decoded reply;
  reply.logits = w.logits;
  for (const auto& c : d.captures) {
    reply.captured.push_back({c, hook.width(c), hook.first_row(c), hook.captured(c)});
  }
  wire::send_message(fd, wire::encode(reply));
}

}  // namespace

int main() {
  // The protocol gets its own descriptor; fd 1 becomes stderr for anything llama.cpp prints.
  const int fd = ::dup(1);
  ::dup2(2, 1);
  // ggml-rpc writes to its servers without MSG_NOSIGNAL: a dead server would kill us silently
  // with SIGPIPE; ignored, the write fails and ggml-rpc aborts with a message that names it.
  ::signal(SIGPIPE, SIG_IGN);
  Worker w;
  w.fault = fault_from_env();
  for (;;) {
    std::optional<wire::Message> m;
    try {
      m = wire::receive_message(fd, -1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "heterodyne-worker: %s\n", e.what());
      return 2;
    }
    if (!m) return 0;  // the orchestrator closed the connection: done
    try {
      switch (m->type) {
        case wire::Type::kHello:
          answer_hello(fd, *m);
          break;
        case wire::Type::kOpen:
          answer_open(fd, *m, w);
          break;
        case wire::Type::kDecode:
          answer_decode(fd, *m, w);
          break;
        case wire::Type::kClose:
          w.arms.erase(wire::decode_close(*m).arm);
          break;
        default:
          throw hd::RuntimeError(std::string("worker protocol: unexpected ") +
                                 wire::type_name(m->type));
      }
    } catch (const hd::InputError& e) {
      if (!answer_error(fd, true, e.what())) return 1;
    } catch (const std::exception& e) {
      if (!answer_error(fd, false, e.what())) return 1;
    }
  }
}
