// The arm worker's wire format: what an orchestrator and an arm running in another process
// (another llama.cpp build, or llama.cpp's RPC backend, whose lost connections abort the
// process) say to each other over a socket pair.
//
// Every message is a frame: magic "HDW1", type, body length (all little-endian u32/u32/u64),
// then the body. The first exchange is Hello both ways; a worker that speaks another version
// is refused by name before anything else is sent. Bodies are flat binary: counts before
// arrays, floats as IEEE-754 bytes, so logits and captured rows cross bit for bit.
//
// This file includes no llama.cpp header (nor does arm_settings.h): the orchestrator's side and
// the worker's share it.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/arm_settings.h"

namespace hd::engine::wire {

inline constexpr uint32_t kMagic = 0x31574448;  // "HDW1" read as little-endian bytes
// Bump on any change to a body's layout; both sides refuse a peer with another version.
inline constexpr uint32_t kVersion = 4;  // 2: Decode's row_rule_exceptions; 3: start, stop_after; 4: Open's server settings

enum class Type : uint32_t {
  kHello = 1,    // both ways: protocol version and, from the worker, its build facts
  kOpen = 2,     // → settings and chunk length: load the model, make the context
  kOpened = 3,   // ← the model's shape facts, threads used, where its tensors live
  kDecode = 4,   // → tokens or residual rows, captures and patches for the hook
  kDecoded = 5,  // ← logits and captured rows
  kError = 6,    // ← an InputError or RuntimeError the worker caught, with its message
  kClose = 7,    // → an arm is done: free its context (no answer)
};

struct Message {
  Type type = Type::kHello;
  std::vector<uint8_t> body;
};

// Sends one frame; throws RuntimeError when the peer is gone (no SIGPIPE: MSG_NOSIGNAL).
void send_message(int fd, const Message& m);
// Reads one frame. nullopt: the peer closed the connection before a new frame began.
// timeout_ms < 0 waits forever; on expiry throws TimeoutError. A frame with the wrong magic,
// an unknown type or a body over 4 GiB throws RuntimeError ("malformed").
std::optional<Message> receive_message(int fd, int timeout_ms);

struct TimeoutError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// --- bodies --------------------------------------------------------------------------------
struct Hello {
  uint32_t version = kVersion;
  std::string facts_json;  // worker → orchestrator: llama.cpp commit, flags, CPU, devices
};

// The arm's settings (every kArmFields entry marked on_wire, in table order) and the chunk
// length.
struct Open {
  ArmSettings settings;
  int32_t n_ctx = 0;
};

// One worker holds every arm of a run that uses its build and servers: ggml-rpc-server serves
// one client at a time, and one process shares one connection per server among its contexts.
struct Opened {
  uint32_t arm = 0;  // the id later messages name
  std::string model_info_json;  // engine::ModelInfo's fields
  int32_t n_threads = 0;
  // {"placement": devices the weights and the compute live on, "flash_attn": what llama.cpp
  // resolved -fa to, where it said}; a worker built before it sends the placement alone.
  std::string placement_json;
};

struct Patch {
  std::string point;
  int64_t row_begin = 0;
  std::vector<float> rows;
};

struct Decode {
  uint32_t arm = 0;
  int32_t n = 0, first_output = 0, pos0 = 0;
  std::vector<int32_t> tokens;  // n of them, or empty when rows carry the input
  std::vector<float> rows;      // [n][n_embd] residual rows entering layer 0, or empty
  std::vector<std::string> captures;
  std::vector<Patch> patches;
  std::vector<std::string> row_rule_exceptions;  // Hook::except_from_row_rule
  std::string start;       // DecodeInput::start
  std::string stop_after;  // Hook::stop_after
};

struct Captured {
  std::string point;
  int64_t width = 0, first_row = 0;
  std::vector<float> data;
};

struct Decoded {
  std::vector<float> logits;
  std::vector<Captured> captured;
};

struct Close {
  uint32_t arm = 0;
};

struct Error {
  bool input = false;  // InputError (the user's to fix) rather than RuntimeError
  std::string message;
};

Message encode(const Hello&);
Message encode(const Open&);
Message encode(const Opened&);
Message encode(const Decode&);
Message encode(const Decoded&);
Message encode(const Error&);
Message encode(const Close&);
// Each throws RuntimeError when the body is short, long or inconsistent.
Hello decode_hello(const Message&);
Open decode_open(const Message&);
Opened decode_opened(const Message&);
Decode decode_decode(const Message&);
Decoded decode_decoded(const Message&);
Error decode_error(const Message&);
Close decode_close(const Message&);

const char* type_name(Type t);

}  // namespace hd::engine::wire
