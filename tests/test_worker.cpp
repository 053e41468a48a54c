// Arms in other processes: the worker protocol, a worker of this binary's build against the
// in-process arm, crashes and hangs, llama.cpp RPC servers on loopback, and another llama.cpp
// build (the pinned tree without AVX-512) as an arm (docs/arms.md).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "analysis/transplant_summary.h"
#include "engine/arm.h"
#include "engine/worker_protocol.h"
#include "errors.h"
#include "run/config.h"
#include "run/session.h"
#include "test_support.h"

using namespace hd;
namespace wire = hd::engine::wire;

namespace {

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

wire::Message through_a_socket(const wire::Message& m) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::thread writer([&] { wire::send_message(sv[0], m); });
  auto got = wire::receive_message(sv[1], 5000);
  writer.join();
  ::close(sv[0]);
  ::close(sv[1]);
  EXPECT_TRUE(got.has_value());
  return got.value_or(wire::Message{});
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

std::vector<int32_t> tokens_of(const engine::Model& m, int n) {
  const std::string text = run::read_text_file(test::shared_path("corpora/tom-sawyer.txt"));
  auto all = m.tokenize(text.substr(0, 4000), true);
  all.resize(static_cast<size_t>(n));
  return all;
}

engine::ArmSettings settings(const std::string& model, const std::string& build = "") {
  engine::ArmSettings s;
  s.model = model;
  s.n_threads = 2;
  s.llama_build = build;
  return s;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool port_open(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// llama.cpp's ggml-rpc-server on 127.0.0.1 (make rpc-server), killed at the end of the scope.
struct RpcServer {
  int port = 0;
  pid_t pid = -1;
  explicit RpcServer(int p = 0) : port(p != 0 ? p : free_port()) { start(); }
  ~RpcServer() { stop(); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port); }
  void start() {
    const std::string log = test::temp_dir("rpc") + "/server-" + std::to_string(port) + ".log";
    pid = ::fork();
    if (pid == 0) {
      if (!std::freopen(log.c_str(), "w", stdout) || !std::freopen(log.c_str(), "a", stderr)) _exit(127);
      const std::string p = std::to_string(port);
      ::execl(HD_RPC_SERVER, HD_RPC_SERVER, "-p", p.c_str(), "-t", "1", static_cast<char*>(nullptr));
      _exit(127);
    }
    // The probe is a client session the server serves and closes at once.
    for (int i = 0; i < 500 && !port_open(port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  void stop() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
};


}  // namespace

// --- the protocol --------------------------------------------------------------------------

TEST(WorkerProtocol, EveryMessageTypeRoundTrips) {
  const wire::Hello h = wire::decode_hello(through_a_socket(wire::encode(wire::Hello{wire::kVersion, R"({"x":1})"})));
  EXPECT_EQ(h.version, wire::kVersion);
  EXPECT_EQ(h.facts_json, R"({"x":1})");

  wire::Open o{{"m.gguf", "q8_0", "f16", "on", 33, 2, "cuda1", 12, {"a:1", "b:2"}, ""}, 256};
  const wire::Open o2 = wire::decode_open(through_a_socket(wire::encode(o)));
  EXPECT_EQ(o2.settings, o.settings);
  EXPECT_EQ(o2.n_ctx, 256);

  const wire::Opened op = wire::decode_opened(through_a_socket(wire::encode(wire::Opened{7, "{}", 3, "[]"})));
  EXPECT_EQ(op.arm, 7u);
  EXPECT_EQ(op.n_threads, 3);
  EXPECT_EQ(op.placement_json, "[]");

  wire::Decode d;
  d.arm = 4;
  d.n = 3;
  d.first_output = 1;
  d.pos0 = 0;
  d.tokens = {1, -2, 300000};
  d.captures = {"l_out-0", "kqv_out-1"};
  d.patches = {{"l_out-0", 1, {1.5f, -0.0f, std::numeric_limits<float>::denorm_min()}}};
  d.row_rule_exceptions = {"l_out-1"};
  d.start = "ffn_inp-1";
  d.stop_after = "l_out-1";
  const wire::Decode d2 = wire::decode_decode(through_a_socket(wire::encode(d)));
  EXPECT_EQ(d2.arm, 4u);
  EXPECT_EQ(d2.start, d.start);
  EXPECT_EQ(d2.stop_after, d.stop_after);
  EXPECT_EQ(d2.row_rule_exceptions, d.row_rule_exceptions);
  EXPECT_EQ(d2.tokens, d.tokens);
  EXPECT_EQ(d2.captures, d.captures);
  ASSERT_EQ(d2.patches.size(), 1u);
  EXPECT_EQ(d2.patches[0].row_begin, 1);
  EXPECT_TRUE(same_bits(d2.patches[0].rows, d.patches[0].rows));  // -0 and denormals intact

  wire::Decoded r{{0.25f, -1e30f}, {{"l_out-0", 2, 1, {1, 2, 3, 4}}}};
  const wire::Decoded r2 = wire::decode_decoded(through_a_socket(wire::encode(r)));
  EXPECT_TRUE(same_bits(r2.logits, r.logits));
  ASSERT_EQ(r2.captured.size(), 1u);
  EXPECT_EQ(r2.captured[0].width, 2);
  EXPECT_EQ(r2.captured[0].first_row, 1);
  EXPECT_TRUE(same_bits(r2.captured[0].data, r.captured[0].data));

  const wire::Error e = wire::decode_error(through_a_socket(wire::encode(wire::Error{true, "bad -ctk"})));
  EXPECT_TRUE(e.input);
  EXPECT_EQ(e.message, "bad -ctk");
  EXPECT_EQ(wire::decode_close(through_a_socket(wire::encode(wire::Close{9}))).arm, 9u);
}

TEST(WorkerProtocol, RefusesWhatIsNotAWholeWellFormedFrame) {
  auto raw = [](const std::vector<uint8_t>& bytes, int timeout_ms = 2000) {
    int sv[2];
    ::socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    if (!bytes.empty()) EXPECT_EQ(::write(sv[0], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::shutdown(sv[0], SHUT_WR);
    std::optional<wire::Message> m;
    std::string error;
    try {
      m = wire::receive_message(sv[1], timeout_ms);
    } catch (const std::exception& e) {
      error = e.what();
    }
    ::close(sv[0]);
    ::close(sv[1]);
    return std::make_pair(m.has_value(), error);
  };
  EXPECT_EQ(raw({}), std::make_pair(false, std::string()));  // EOF before a frame: done
  EXPECT_NE(raw({'X', 'D', 'W', '1', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}).second.find("magic"), std::string::npos);
  EXPECT_NE(raw({'H', 'D', 'W', '1', 99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}).second.find("unknown message type"), std::string::npos);
  EXPECT_NE(raw({'H', 'D', 'W', '1', 1, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 1, 2}).second.find("middle of a message"), std::string::npos);
  // Bodies: trailing bytes, arrays longer than the body, the wrong type.
  wire::Message m = wire::encode(wire::Close{1});
  m.body.push_back(0);
  EXPECT_THROW(wire::decode_close(m), RuntimeError);
  wire::Message d = wire::encode(wire::Decoded{{1, 2, 3}, {}});
  d.body[0] = 200;  // the logits count now runs past the end
  EXPECT_THROW(wire::decode_decoded(d), RuntimeError);
  EXPECT_THROW(wire::decode_open(wire::encode(wire::Close{1})), RuntimeError);
  // Silence is a timeout, not a hang.
  int sv[2];
  ::socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(wire::receive_message(sv[1], 200), wire::TimeoutError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ::close(sv[0]);
  ::close(sv[1]);
}

// --- a worker of this binary's own build -------------------------------------------------

TEST(WorkerArm, BitwiseEqualToTheInProcessArmIncludingCapturesAndPatches) {
  HD_REQUIRE_SHARED();
  const std::string path = test::shared_path("models/stories260K.gguf");
  auto model = engine::model_load(path);
  const auto tokens = tokens_of(*model, 48);
  engine::Arm local(model, settings(path), 64);
  engine::Arm remote(model, settings(path, "pinned"), 64);
  EXPECT_EQ(remote.facts().at("process"), "worker");
  EXPECT_EQ(local.facts().at("process"), "in-process");

  std::vector<float> la, ra;
  engine::Hook lh, rh;
  for (auto* h : {&lh, &rh}) {
    h->capture("l_out-1");
    h->capture("kqv_out-3");
  }
  local.run_chunk(tokens, &lh, la, 5);
  remote.run_chunk(tokens, &rh, ra, 5);
  EXPECT_TRUE(same_bits(la, ra));
  for (const char* p : {"l_out-1", "kqv_out-3"}) {
    EXPECT_TRUE(same_bits(lh.captured(p), rh.captured(p))) << p;
    EXPECT_EQ(lh.width(p), rh.width(p));
  }
  // A patch crosses the boundary: overwrite rows 10..19 of l_out-1 with a scaled copy.
  std::vector<float> rows(lh.captured("l_out-1").begin() + 10 * 64, lh.captured("l_out-1").begin() + 20 * 64);
  for (float& x : rows) x *= 1.5f;
  engine::Hook lp, rp;
  lp.overwrite("l_out-1", 10, rows);
  rp.overwrite("l_out-1", 10, rows);
  std::vector<float> lpa, rpa;
  local.run_chunk(tokens, &lp, lpa, 5);
  remote.run_chunk(tokens, &rp, rpa, 5);
  EXPECT_TRUE(same_bits(lpa, rpa));
  EXPECT_FALSE(same_bits(lpa, la));  // the patch changed something
  // A decode step through the KV cache.
  std::vector<float> ls, rs;
  local.run_step(tokens[0], 48, nullptr, ls);
  remote.run_step(tokens[0], 48, nullptr, rs);
  EXPECT_TRUE(same_bits(ls, rs));
  // A pass from a graph node (prefix reuse) reproduces the whole pass in both, and a hook that
  // stops there leaves no logits but the point.
  engine::Hook full;
  full.capture("l_out-1");
  full.capture("l_out-2");
  local.run_chunk(tokens, &full, la, 5);
  local.run_from("l_out-1", full.captured("l_out-1"), 48, nullptr, ls, 5);
  remote.run_from("l_out-1", full.captured("l_out-1"), 48, nullptr, rs, 5);
  EXPECT_TRUE(same_bits(ls, la));
  EXPECT_TRUE(same_bits(rs, la));
  engine::Hook stop;
  stop.stop_after("l_out-2");
  remote.run_from("l_out-1", full.captured("l_out-1"), 48, &stop, rs, 5);
  EXPECT_TRUE(rs.empty());
  EXPECT_TRUE(same_bits(stop.captured("l_out-2"), full.captured("l_out-2")));
  EXPECT_THROW(remote.run_from("no-such-node", full.captured("l_out-1"), 48, nullptr, rs),
               RuntimeError);
  // An error inside the worker comes back as the same kind of error.
  EXPECT_THROW(remote.run_chunk(std::vector<int32_t>(65, 1), nullptr, ra), RuntimeError);
  engine::Hook missing;
  missing.capture("l_out-99");
  try {
    remote.run_chunk(tokens, &missing, ra);
    ADD_FAILURE() << "a point the graph lacks must fail";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("l_out-99"), std::string::npos) << e.what();
  }
  remote.run_chunk(tokens, nullptr, ra, 5);  // and the worker is still usable after it
  EXPECT_TRUE(same_bits(la, ra));
}

TEST(WorkerArm, ACrashIsReportedWithHowTheWorkerEnded) {
  HD_REQUIRE_SHARED();
  const std::string path = test::shared_path("models/stories260K.gguf");
  auto model = engine::model_load(path);
  const auto tokens = tokens_of(*model, 16);
  std::vector<float> logits;
  {
    ScopedEnv fault("HETERODYNE_WORKER_FAULT", "abort-at-decode:2");
    engine::Arm arm(model, settings(path, "pinned"), 16);
    arm.run_chunk(tokens, nullptr, logits);
    try {
      arm.run_chunk(tokens, nullptr, logits);
      ADD_FAILURE() << "the second decode must fail";
    } catch (const RuntimeError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("killed by signal 6"), std::string::npos) << m;
      EXPECT_NE(m.find("injected fault: abort"), std::string::npos) << m;
      EXPECT_NE(m.find("during a decode of 16 tokens"), std::string::npos) << m;
    }
    EXPECT_THROW(arm.run_chunk(tokens, nullptr, logits), RuntimeError);  // not a hang
  }
  {
    ScopedEnv fault("HETERODYNE_WORKER_FAULT", "exit-at-decode:1");
    engine::Arm arm(model, settings(path, "pinned"), 16);
    try {
      arm.run_chunk(tokens, nullptr, logits);
      ADD_FAILURE() << "the decode must fail";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("exited with status 3"), std::string::npos) << e.what();
    }
  }
}

TEST(WorkerArm, AHangIsStoppedAtTheTimeout) {
  HD_REQUIRE_SHARED();
  const std::string path = test::shared_path("models/stories260K.gguf");
  auto model = engine::model_load(path);
  const auto tokens = tokens_of(*model, 16);
  ScopedEnv fault("HETERODYNE_WORKER_FAULT", "hang-at-decode:1");
  ScopedEnv timeout("HETERODYNE_WORKER_TIMEOUT", "1");
  engine::Arm arm(model, settings(path, "pinned"), 16);
  std::vector<float> logits;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    arm.run_chunk(tokens, nullptr, logits);
    ADD_FAILURE() << "a hung worker must be reported";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("gave no answer in 1 s"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(15));
}

TEST(WorkerArm, SettingsRoundTripThroughTheStoredConfigAndVerify) {
  engine::ArmSettings s = settings("m.gguf", "pinned,GGML_NATIVE=OFF");
  s.device = "cuda1";
  s.n_gpu_layers = 17;
  s.rpc = {"10.0.0.5:50052", "10.0.0.6:50052"};
  const engine::ArmSettings back = run::arm_settings_from_json(run::to_json(s));
  EXPECT_EQ(back.device, "cuda1");
  EXPECT_EQ(back.n_gpu_layers, 17);
  EXPECT_EQ(back.rpc, s.rpc);
  EXPECT_EQ(back.llama_build, s.llama_build);
  // A file from before these settings reads as this binary's CPU.
  nlohmann::json old = run::to_json(settings("m.gguf"));
  for (const char* k : {"device", "n_gpu_layers", "rpc", "llama_build"}) old.erase(k);
  const engine::ArmSettings o = run::arm_settings_from_json(old);
  EXPECT_EQ(o.device, "cpu");
  EXPECT_TRUE(o.rpc.empty() && o.llama_build.empty());

  HD_REQUIRE_SHARED();
  const std::string out = test::temp_dir("worker-verify") + "/w.hdy";
  const std::string m = test::shared_path("models/stories260K.gguf");
  auto r = test::run_cli({"diff", "--a", m, "--b", m, "--b-llama-build", "pinned", "--text-file",
                          test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "32",
                          "--max-chunks", "2", "--transplants", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_cli({"verify", out});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = test::run_cli({"show", out});
  EXPECT_NE(r.out.find("--llama-build pinned"), std::string::npos) << r.out;
  // Arms of different builds: the report leads with the flips.
  EXPECT_EQ(r.out.rfind("top-1 flips: 0 of 62 scored positions", 0), 0u) << r.out;
}

TEST(WorkerArm, DevicesAndServersThatDoNotExistAreOneClearLine) {
  HD_REQUIRE_SHARED();
  const std::string m = test::shared_path("models/stories260K.gguf");
  const std::string t = test::shared_path("corpora/tom-sawyer.txt");
  const std::string out = test::temp_dir("worker-bad") + "/x.hdy";
  auto diff = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"diff", "--a", m, "--b", m, "--text-file", t, "--chunk", "32",
                                     "--max-chunks", "1", "-o", out, "--force"};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_cli(args);
  };
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  };
  const int closed = free_port();
  for (const Case& c : std::vector<Case>{
           {{"--b-dev", "cuda0"}, "no device 'cuda0'"},
           {{"--b-rpc", "nohost"}, "is not host:port"},
           {{"--b-rpc", "127.0.0.1:" + std::to_string(closed)}, "cannot reach the RPC server"},
           {{"--b-rpc", "127.0.0.1:1", "--b-dev", "cuda0"}, "leave -dev at cpu"},
           {{"--b-llama-build", "/nonexistent/llama.cpp"}, "no worker for llama.cpp build '/nonexistent/llama.cpp': '/nonexistent/llama.cpp' is not pinned, npm:"},
       }) {
    const auto r = diff(c.flags);
    EXPECT_EQ(r.exit_code, 2) << c.flags[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

// --- llama.cpp RPC servers on loopback ----------------------------------------------------

TEST(Rpc, AnArmSplitOverTwoServersEqualsTheLocalArmBitwise) {
  HD_REQUIRE_SHARED();
  RpcServer s1, s2;
  const std::string a = test::shared_path("models/TinyStories-656K.f16.gguf");
  const std::string b = test::shared_path("models/tinystories-656k-q8_0.gguf");
  auto config = [&](std::vector<std::string> rpc) {
    run::DiffConfig c;
    c.a = settings(a);
    c.b = settings(b);
    c.b.rpc = std::move(rpc);
    c.chunk = 64;
    c.floor = false;
    c.transplants = c.components = true;
    return c;
  };
  auto run_all = [&](run::DiffConfig c) {
    run::Session s(std::move(c));
    auto chunks = s.chunks_of(run::read_text_file(test::shared_path("corpora/tom-sawyer.656k-safe.txt")).substr(0, 6000));
    std::vector<analysis::ChunkResult> out;
    for (int i = 0; i < 2; ++i) out.push_back(s.compute(i, chunks[static_cast<size_t>(i)]));
    return std::make_pair(std::move(out), s.arms_provenance());
  };
  const auto [local, lp] = run_all(config({}));
  const auto [remote, rp] = run_all(config({s1.endpoint(), s2.endpoint()}));
  const auto devices = rp.at("b").at("runs_on").at("placement").at("devices");
  ASSERT_EQ(devices.size(), 2u) << rp.dump();
  EXPECT_EQ(devices[0].at("description"), s1.endpoint());
  EXPECT_EQ(devices[1].at("description"), s2.endpoint());
  double total = 0;
  for (size_t c = 0; c < local.size(); ++c) {
    const auto &l = local[c].diff.positions, &r = remote[c].diff.positions;
    ASSERT_EQ(l.size(), r.size());
    for (size_t p = 0; p < l.size(); ++p) {
      EXPECT_EQ(l[p].score.kl, r[p].score.kl) << "chunk " << c << " position " << p;
      total += l[p].score.kl;
    }
    const auto &lt = *local[c].transplants, &rt = *remote[c].transplants;
    ASSERT_EQ(lt.denoise.size(), rt.denoise.size());
    for (size_t i = 0; i < lt.denoise.size(); ++i) {
      EXPECT_EQ(lt.denoise[i].kl, rt.denoise[i].kl);  // overwrites on RPC buffers
      EXPECT_EQ(lt.noise[i].kl, rt.noise[i].kl);      // captures from RPC buffers
    }
  }
  EXPECT_GT(total, 0.0) << "F16 vs Q8_0 must differ, or the equality shows nothing";
}

TEST(Rpc, AServerKilledMidRunIsAClearErrorAndTheFileResumes) {
  HD_REQUIRE_SHARED();
  RpcServer s1, s2;
  const std::string m = test::shared_path("models/stories260K.gguf");
  const std::string dir = test::temp_dir("rpc-kill");
  const std::string out = dir + "/r.hdy";
  const std::vector<std::string> args = {
      "diff", "--a", m, "--b", m, "--b-rpc", s1.endpoint() + "," + s2.endpoint(), "--text-file",
      test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64", "--max-chunks", "60",
      "--transplants", "-t", "1", "-o", out};
  const pid_t pid = test::spawn_cli(args, dir + "/run.out", dir + "/run.err");
  for (int i = 0; i < 3000 && test::stored_chunks(out) < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_GE(test::stored_chunks(out), 2) << test::read_file(dir + "/run.err");
  s2.stop();
  int status = 0;
  const auto t0 = std::chrono::steady_clock::now();
  ::waitpid(pid, &status, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60)) << "no hang";
  ASSERT_TRUE(WIFEXITED(status));
  const std::string err = test::read_file(dir + "/run.err");
  EXPECT_EQ(WEXITSTATUS(status), 1) << err;
  EXPECT_NE(err.find("was killed by signal 6"), std::string::npos) << err;
  EXPECT_NE(err.find("RPC"), std::string::npos) << err;
  EXPECT_NE(err.find("heterodyne diff --resume"), std::string::npos) << err;
  const int kept = test::stored_chunks(out);
  EXPECT_GE(kept, 2);
  EXPECT_LT(kept, 60) << "the run ended before the server died";

  RpcServer again(s2.port);
  auto r = test::run_cli({"diff", "--resume", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::stored_chunks(out), 60);
  r = test::run_cli({"verify", out});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// --- another llama.cpp build -------------------------------------------------------------

// The pinned tree built with GGML_NATIVE=OFF has AVX2 kernels only; on a machine with AVX-512
// the native build's vector widths differ, so their float sums differ.
TEST(OtherBuild, NativeOffDiffersReproduciblyAndItsTransplantsTelescope) {
  HD_REQUIRE_SHARED();
  std::ifstream cpu("/proc/cpuinfo");
  const std::string info((std::istreambuf_iterator<char>(cpu)), std::istreambuf_iterator<char>());
  if (info.find("avx512f") == std::string::npos) {
    GTEST_SKIP() << "this CPU has no AVX-512: the native build is the AVX2 build here";
  }
  const std::string m = test::shared_path("models/stories260K.gguf");
  auto run_all = [&] {
    run::DiffConfig c;
    c.a = settings(m);
    c.b = settings(m, "pinned,GGML_NATIVE=OFF");
    c.chunk = 64;
    c.floor = false;
    c.transplants = c.components = true;
    run::Session s(std::move(c));
    auto chunks = s.chunks_of(run::read_text_file(test::shared_path("corpora/tom-sawyer.txt")).substr(0, 20000));
    std::vector<analysis::ChunkResult> out;
    for (int i = 0; i < 3; ++i) out.push_back(s.compute(i, chunks[static_cast<size_t>(i)]));
    EXPECT_NE(s.arms_provenance().at("b").at("runs_on").at("build").at("llama_flags").get<std::string>().find("GGML_NATIVE=OFF"), std::string::npos);
    return out;
  };
  const auto first = run_all();
  const auto second = run_all();
  double total = 0;
  for (size_t c = 0; c < first.size(); ++c) {
    for (size_t p = 0; p < first[c].diff.positions.size(); ++p) {
      EXPECT_EQ(first[c].diff.positions[p].score.kl, second[c].diff.positions[p].score.kl);
      total += first[c].diff.positions[p].score.kl;
    }
  }
  EXPECT_GT(total, 0.0) << "AVX2 and AVX-512 kernels gave bitwise equal logits";
  const auto s = analysis::summarize_transplants(first);
  ASSERT_TRUE(s && s->has_components);
  test::expect_steps_telescope(*s);
  EXPECT_EQ(s->denoise_components.embedding.mean, 0.0) << "both builds look up the same rows";
  EXPECT_EQ(s->noise_components.embedding.mean, 0.0);
}

// A real version-vs-version run: the llama.cpp of node-llama-cpp 3.14.0 (2025-10-02, from the npm
// registry, built once into the cache) against the pinned one. Its graph names the embedding
// node "inp_embd" and its RPC API differs: the worker absorbs both. On TinyStories-656K Q8_0
// its kernels give other numbers (docs/arms.md), and show leads with the flips.
TEST(OtherBuild, AnOlderReleaseFromNpmDiffersAndShowLeadsWithFlips) {
  HD_REQUIRE_SHARED();
  const std::string m = test::shared_path("models/tinystories-656k-q8_0.gguf");
  const std::string out = test::temp_dir("npm-build") + "/v.hdy";
  auto r = test::run_cli({"diff", "--a", m, "--b", m, "--b-llama-build",
                          "npm:node-llama-cpp@3.14.0,LLAMA_CURL=OFF", "--text-file",
                          test::shared_path("corpora/tom-sawyer.656k-safe.txt"), "--chunk", "128",
                          "--max-chunks", "4", "--transplants", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_cli({"show", out, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("kl_mean").get<double>(), 0.0);
  EXPECT_GT(j.at("flips").at("n_flips").get<int>(), 0) << j.at("flips").dump();
  EXPECT_NEAR(j.at("flips").at("n_flips").get<double>() / j.at("flips").at("n_scored").get<double>(),
              j.at("top1_change_rate").get<double>(), 1e-12);
  EXPECT_EQ(j.at("provenance").at("arms").at("b").at("runs_on").at("build").at("llama_commit"),
            "50d26e8acc98507d3fd6e5e8e83dc5fbd8e9b342");
  r = test::run_cli({"show", out});
  EXPECT_EQ(r.out.rfind("top-1 flips: ", 0), 0u) << r.out;
  r = test::run_cli({"verify", out});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}
