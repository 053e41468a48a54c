#include "engine/worker_protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <type_traits>

#include "errors.h"

namespace hd::engine::wire {

namespace {

// Little-endian on every platform llama.cpp's CPU backend targets; the frame says so by its
// magic, which a big-endian peer would read reversed.
class Writer {
 public:
  void u32(uint32_t v) { raw(&v, 4); }
  void i32(int32_t v) { raw(&v, 4); }
  void i64(int64_t v) { raw(&v, 8); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  void floats(const std::vector<float>& v) {
    i64(static_cast<int64_t>(v.size()));
    raw(v.data(), v.size() * sizeof(float));
  }
  void ints(const std::vector<int32_t>& v) {
    i64(static_cast<int64_t>(v.size()));
    raw(v.data(), v.size() * sizeof(int32_t));
  }
  void strs(const std::vector<std::string>& v) {
    u32(static_cast<uint32_t>(v.size()));
    for (const auto& s : v) str(s);
  }
  Message done(Type t) { return {t, std::move(out_)}; }

 private:
  // insert, not resize + memcpy: inlined into encode(Open)'s field loop, GCC 12 -O3 cannot
  // bound the resize and warns (stringop-overflow) about the memcpy.
  void raw(const void* p, size_t n) {
    if (n == 0) return;
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  Reader(const Message& m, Type want) : body_(m.body) {
    if (m.type != want) {
      throw RuntimeError(std::string("worker protocol: expected ") + type_name(want) + ", got " +
                         type_name(m.type));
    }
  }
  uint32_t u32() { return pod<uint32_t>(); }
  int32_t i32() { return pod<int32_t>(); }
  int64_t i64() { return pod<int64_t>(); }
  std::string str() {
    const size_t n = u32();
    need(n);
    std::string s(reinterpret_cast<const char*>(body_.data() + at_), n);
    at_ += n;
    return s;
  }
  std::vector<float> floats() { return array<float>(); }
  std::vector<int32_t> ints() { return array<int32_t>(); }
  std::vector<std::string> strs() {
    const uint32_t n = u32();
    std::vector<std::string> v;
    for (uint32_t i = 0; i < n; ++i) v.push_back(str());
    return v;
  }
  void end() const {
    if (at_ != body_.size()) throw RuntimeError("worker protocol: a message has trailing bytes");
  }

 private:
  template <class T>
  T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, body_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  template <class T>
  std::vector<T> array() {
    const int64_t n = i64();
    if (n < 0 || static_cast<uint64_t>(n) > (body_.size() - at_) / sizeof(T)) {
      throw RuntimeError("worker protocol: a message is shorter than its array");
    }
    std::vector<T> v(static_cast<size_t>(n));
    if (n == 0) return v;  // memcpy from or to a null pointer is undefined even for 0 bytes
    std::memcpy(v.data(), body_.data() + at_, v.size() * sizeof(T));
    at_ += v.size() * sizeof(T);
    return v;
  }
  void need(size_t n) const {
    if (n > body_.size() - at_) throw RuntimeError("worker protocol: a message is short");
  }
  const std::vector<uint8_t>& body_;
  size_t at_ = 0;
};

void send_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t w = ::send(fd, b, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw RuntimeError(std::string("the worker connection is closed (") +
                                   std::strerror(errno) + ")");
    b += w;
    n -= static_cast<size_t>(w);
  }
}

// Reads exactly n bytes before the deadline. Returns false on a clean EOF before any byte.
bool receive_all(int fd, void* p, size_t n, std::chrono::steady_clock::time_point deadline,
                 bool forever) {
  auto* b = static_cast<uint8_t*>(p);
  size_t got = 0;
  while (got < n) {
    int wait_ms = -1;
    if (!forever) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) throw TimeoutError("no answer from the worker in time");
      wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
    }
    pollfd pfd{fd, POLLIN, 0};
    const int pr = ::poll(&pfd, 1, wait_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) throw RuntimeError(std::string("poll failed: ") + std::strerror(errno));
    if (pr == 0) continue;  // the deadline check above decides
    const ssize_t r = ::read(fd, b + got, n - got);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) throw RuntimeError(std::string("reading from the worker failed: ") +
                                  std::strerror(errno));
    if (r == 0) {
      if (got == 0) return false;
      throw RuntimeError("the worker closed the connection in the middle of a message");
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

const char* type_name(Type t) {
  switch (t) {
    case Type::kHello: return "Hello";
    case Type::kOpen: return "Open";
    case Type::kOpened: return "Opened";
    case Type::kDecode: return "Decode";
    case Type::kDecoded: return "Decoded";
    case Type::kError: return "Error";
    case Type::kClose: return "Close";
  }
  return "an unknown message";
}

void send_message(int fd, const Message& m) {
  uint8_t head[16];
  const uint32_t magic = kMagic, type = static_cast<uint32_t>(m.type);
  const uint64_t len = m.body.size();
  std::memcpy(head, &magic, 4);
  std::memcpy(head + 4, &type, 4);
  std::memcpy(head + 8, &len, 8);
  send_all(fd, head, sizeof head);
  send_all(fd, m.body.data(), m.body.size());
}

std::optional<Message> receive_message(int fd, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const bool forever = timeout_ms < 0;
  uint8_t head[16];
  if (!receive_all(fd, head, sizeof head, deadline, forever)) return std::nullopt;
  uint32_t magic, type;
  uint64_t len;
  std::memcpy(&magic, head, 4);
  std::memcpy(&type, head + 4, 4);
  std::memcpy(&len, head + 8, 8);
  if (magic != kMagic) throw RuntimeError("worker protocol: a frame without the HDW1 magic");
  if (type < 1 || type > static_cast<uint32_t>(Type::kClose)) {
    throw RuntimeError("worker protocol: unknown message type " + std::to_string(type));
  }
  if (len > (uint64_t{1} << 32)) throw RuntimeError("worker protocol: a frame over 4 GiB");
  Message m;
  m.type = static_cast<Type>(type);
  m.body.resize(static_cast<size_t>(len));
  if (len > 0 && !receive_all(fd, m.body.data(), m.body.size(), deadline, forever)) {
    throw RuntimeError("the worker closed the connection in the middle of a message");
  }
  return m;
}

Message encode(const Hello& h) {
  Writer w;
  w.u32(h.version);
  w.str(h.facts_json);
  return w.done(Type::kHello);
}

Hello decode_hello(const Message& m) {
  Reader r(m, Type::kHello);
  Hello h;
  h.version = r.u32();
  // A peer of another version may lay out the rest differently: stop at the version.
  if (h.version != kVersion) return h;
  h.facts_json = r.str();
  r.end();
  return h;
}

// The Open body: each on-wire setting by its type (a string, an i32, a count and strings), in
// table order, then n_ctx. Version 4 appended the server settings (slots … cache_reuse).
static_assert(sizeof(int) == sizeof(int32_t), "settings of type int travel as i32");
Message encode(const Open& o) {
  Writer w;
  for_each_arm_field([&](const auto& field) {
    if (!field.info.on_wire) return;
    const auto& v = o.settings.*field.member;
    using T = typename std::decay_t<decltype(field)>::Value;
    if constexpr (std::is_same_v<T, std::string>) w.str(v);
    else if constexpr (std::is_same_v<T, int>) w.i32(v);
    else {
      static_assert(std::is_same_v<T, std::vector<std::string>>, "a setting type the wire lacks");
      w.strs(v);
    }
  });
  w.i32(o.n_ctx);
  return w.done(Type::kOpen);
}

Open decode_open(const Message& m) {
  Reader r(m, Type::kOpen);
  Open o;
  for_each_arm_field([&](const auto& field) {
    if (!field.info.on_wire) return;
    auto& v = o.settings.*field.member;
    using T = typename std::decay_t<decltype(field)>::Value;
    if constexpr (std::is_same_v<T, std::string>) v = r.str();
    else if constexpr (std::is_same_v<T, int>) v = r.i32();
    else v = r.strs();  // encode's static_assert names any other type
  });
  o.n_ctx = r.i32();
  r.end();
  return o;
}

Message encode(const Opened& o) {
  Writer w;
  w.u32(o.arm);
  w.str(o.model_info_json);
  w.i32(o.n_threads);
  w.str(o.placement_json);
  return w.done(Type::kOpened);
}

Opened decode_opened(const Message& m) {
  Reader r(m, Type::kOpened);
  Opened o;
  o.arm = r.u32();
  o.model_info_json = r.str();
  o.n_threads = r.i32();
  o.placement_json = r.str();
  r.end();
  return o;
}

Message encode(const Decode& d) {
  Writer w;
  w.u32(d.arm);
  w.i32(d.n);
  w.i32(d.first_output);
  w.i32(d.pos0);
  w.ints(d.tokens);
  w.floats(d.rows);
  w.strs(d.captures);
  w.u32(static_cast<uint32_t>(d.patches.size()));
  for (const auto& p : d.patches) {
    w.str(p.point);
    w.i64(p.row_begin);
    w.floats(p.rows);
  }
  w.strs(d.row_rule_exceptions);
  w.str(d.start);
  w.str(d.stop_after);
  return w.done(Type::kDecode);
}

Decode decode_decode(const Message& m) {
  Reader r(m, Type::kDecode);
  Decode d;
  d.arm = r.u32();
  d.n = r.i32();
  d.first_output = r.i32();
  d.pos0 = r.i32();
  d.tokens = r.ints();
  d.rows = r.floats();
  d.captures = r.strs();
  const uint32_t n_patches = r.u32();
  for (uint32_t i = 0; i < n_patches; ++i) {
    Patch p;
    p.point = r.str();
    p.row_begin = r.i64();
    p.rows = r.floats();
    d.patches.push_back(std::move(p));
  }
  d.row_rule_exceptions = r.strs();
  d.start = r.str();
  d.stop_after = r.str();
  r.end();
  if (d.tokens.empty() == d.rows.empty()) {
    throw RuntimeError("worker protocol: a decode needs tokens or rows, not both or neither");
  }
  if (!d.tokens.empty() && d.tokens.size() != static_cast<size_t>(d.n)) {
    throw RuntimeError("worker protocol: a decode's token count disagrees with n");
  }
  return d;
}

Message encode(const Decoded& d) {
  Writer w;
  w.floats(d.logits);
  w.u32(static_cast<uint32_t>(d.captured.size()));
  for (const auto& c : d.captured) {
    w.str(c.point);
    w.i64(c.width);
    w.i64(c.first_row);
    w.floats(c.data);
  }
  return w.done(Type::kDecoded);
}

Decoded decode_decoded(const Message& m) {
  Reader r(m, Type::kDecoded);
  Decoded d;
  d.logits = r.floats();
  const uint32_t n = r.u32();
  for (uint32_t i = 0; i < n; ++i) {
    Captured c;
    c.point = r.str();
    c.width = r.i64();
    c.first_row = r.i64();
    c.data = r.floats();
    if (c.width < 1 || c.data.size() % static_cast<size_t>(c.width) != 0) {
      throw RuntimeError("worker protocol: captured rows of '" + c.point + "' do not fit its width");
    }
    d.captured.push_back(std::move(c));
  }
  r.end();
  return d;
}

Message encode(const Error& e) {
  Writer w;
  w.u32(e.input ? 1 : 0);
  w.str(e.message);
  return w.done(Type::kError);
}

Error decode_error(const Message& m) {
  Reader r(m, Type::kError);
  Error e;
  e.input = r.u32() != 0;
  e.message = r.str();
  r.end();
  return e;
}

Message encode(const Close& c) {
  Writer w;
  w.u32(c.arm);
  return w.done(Type::kClose);
}

Close decode_close(const Message& m) {
  Reader r(m, Type::kClose);
  Close c;
  c.arm = r.u32();
  r.end();
  return c;
}

}  // namespace hd::engine::wire
