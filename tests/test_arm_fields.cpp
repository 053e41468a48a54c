// engine's arm field table (engine/arm_settings.h) and everything that walks it: config JSON,
// the worker's Open message, the CLI flags, a sweep's setting names and floor's config. Every
// field is set to a value other than its default, so a setting added to the table is covered
// here without editing this file, and a place that forgets it fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "kinds/command_line/arm_flags.h"
#include "engine/arm_settings.h"
#include "engine/worker_protocol.h"
#include "errors.h"
#include "run/config.h"
#include "kinds/floor/floor.h"
#include "kinds/sweep/sweep.h"
#include "store/experiment.h"
#include "test_support.h"

using namespace hd;
namespace wire = hd::engine::wire;

namespace {

// Every field other than its default, distinct per `salt` (lower case: the CLI lower-cases
// device names; ints at least 1: -t refuses less).
engine::ArmSettings every_field_changed(int salt) {
  engine::ArmSettings s;
  int i = 0;
  engine::for_each_arm_field([&](const auto& field) {
    using T = typename std::decay_t<decltype(field)>::Value;
    auto& v = s.*field.member;
    const std::string tag = std::string(field.info.key) + "-" + std::to_string(salt);
    if constexpr (std::is_same_v<T, std::string>) {
      v = "v-" + tag;
    } else if constexpr (std::is_same_v<T, int>) {
      v = 1000 * salt + ++i;
    } else {
      static_assert(std::is_same_v<T, std::vector<std::string>>, "a setting type this test lacks");
      v = {"h-" + tag + ":1", "h-" + tag + ":2"};
    }
  });
  return s;
}

// Each field that differs, by name (what a failure should say).
std::vector<std::string> differing(const engine::ArmSettings& a, const engine::ArmSettings& b) {
  std::vector<std::string> out;
  engine::for_each_arm_field([&](const auto& field) {
    if (a.*field.member != b.*field.member) out.emplace_back(field.info.key);
  });
  return out;
}

// The flags that give `s` with one prefix ("", "a-", "b-"), spelled by their long names.
std::vector<std::string> flags_for(const engine::ArmSettings& s, const std::string& prefix) {
  std::vector<std::string> args;
  engine::for_each_arm_field([&](const auto& field) {
    if (*field.info.flags == '\0') return;
    using T = typename std::decay_t<decltype(field)>::Value;
    const std::string spellings = field.info.flags;
    args.push_back("--" + prefix + spellings.substr(spellings.rfind(',') + 1));
    const auto& v = s.*field.member;
    if constexpr (std::is_same_v<T, std::string>) {
      args.push_back(v);
    } else if constexpr (std::is_same_v<T, int>) {
      args.push_back(std::to_string(v));
    } else {
      std::string list;
      for (const auto& e : v) list += (list.empty() ? "" : ",") + e;
      args.push_back(list);
    }
  });
  return args;
}

struct Parsed {
  cli::ArmFlags shared, a, b;
};

Parsed parse_arm_flags(std::vector<std::string> args) {
  CLI::App app;
  Parsed p;
  cli::add_arm_flags(app, p.shared, "");
  cli::add_arm_flags(app, p.a, "a-");
  cli::add_arm_flags(app, p.b, "b-");
  std::reverse(args.begin(), args.end());  // CLI11 reads a vector from its back
  app.parse(args);
  return p;
}

// Version 1's Open body, written out by hand from the layout it had before the field table.
std::vector<uint8_t> version_1_open(const engine::ArmSettings& s, int32_t n_ctx) {
  std::vector<uint8_t> out;
  auto raw = [&](const void* p, size_t n) {
    out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  auto u32 = [&](uint32_t v) { raw(&v, 4); };
  auto str = [&](const std::string& v) {
    u32(static_cast<uint32_t>(v.size()));
    raw(v.data(), v.size());
  };
  auto i32 = [&](int32_t v) { raw(&v, 4); };
  str(s.model);
  str(s.cache_type_k);
  str(s.cache_type_v);
  str(s.flash_attn);
  i32(s.n_ubatch);
  i32(s.n_threads);
  str(s.device);
  i32(s.n_gpu_layers);
  u32(static_cast<uint32_t>(s.rpc.size()));
  for (const auto& e : s.rpc) str(e);
  i32(n_ctx);
  return out;
}

// Version 4: version 1's settings, then the server settings (slots … cache_reuse), then n_ctx.
std::vector<uint8_t> version_4_open(const engine::ArmSettings& s, int32_t n_ctx) {
  std::vector<uint8_t> out = version_1_open(s, n_ctx);
  out.resize(out.size() - 4);  // n_ctx comes last
  auto raw = [&](const void* p, size_t n) {
    out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  auto i32 = [&](int32_t v) { raw(&v, 4); };
  auto str = [&](const std::string& v) {
    const auto size = static_cast<uint32_t>(v.size());
    raw(&size, 4);
    raw(v.data(), v.size());
  };
  i32(s.slots);
  str(s.kv_unified);
  i32(s.slot);
  i32(s.neighbours);
  i32(s.neighbour_seed);
  i32(s.n_batch);
  str(s.prompt_cache);
  i32(s.cache_reuse);
  i32(n_ctx);
  return out;
}

}  // namespace

TEST(ArmConfig, EveryFieldIsChangedByTheTestValues) {
  EXPECT_EQ(differing(engine::ArmSettings{}, every_field_changed(1)), engine::arm_field_keys());
  EXPECT_EQ(differing(every_field_changed(1), every_field_changed(2)), engine::arm_field_keys());
}

TEST(ArmConfig, EveryFieldRoundTripsThroughTheConfigJson) {
  const engine::ArmSettings s = every_field_changed(1);
  const nlohmann::json j = run::to_json(s);
  for (const auto& key : engine::arm_field_keys()) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.size(), engine::arm_field_keys().size());
  EXPECT_EQ(differing(run::arm_settings_from_json(j), s), std::vector<std::string>{});
  // Through text too, as the experiment file stores it.
  EXPECT_EQ(run::arm_settings_from_json(nlohmann::json::parse(j.dump())), s);
}

TEST(ArmConfig, AConfigFromBeforeTheLaterKeysReadsAsThisBinarysCpu) {
  // An arm as diff stored it before devices, RPC servers and other builds.
  const auto old = nlohmann::json::parse(R"({"cache_type_k":"q8_0","cache_type_v":"f16",
      "flash_attn":"on","model":"/m/a.gguf","n_threads":4,"n_ubatch":64})");
  const engine::ArmSettings s = run::arm_settings_from_json(old);
  engine::ArmSettings want;
  want.model = "/m/a.gguf";
  want.cache_type_k = "q8_0";
  want.flash_attn = "on";
  want.n_threads = 4;
  want.n_ubatch = 64;
  EXPECT_EQ(differing(s, want), std::vector<std::string>{});
  EXPECT_EQ(s.device, "cpu");
  EXPECT_EQ(s.n_gpu_layers, -1);
  EXPECT_TRUE(s.rpc.empty() && s.llama_build.empty());
  // The keys of the first format are not optional: a file without one is damaged.
  for (const char* k : {"model", "cache_type_k", "cache_type_v", "flash_attn", "n_ubatch",
                        "n_threads"}) {
    nlohmann::json damaged = old;
    damaged.erase(k);
    EXPECT_THROW(run::arm_settings_from_json(damaged), nlohmann::json::exception) << k;
  }
  // What is written keeps its keys: a default arm is stored as it always was.
  engine::ArmSettings d;
  d.model = "/m/a.gguf";
  EXPECT_EQ(run::to_json(d).dump(),
            R"({"cache_type_k":"f16","cache_type_v":"f16","device":"cpu","flash_attn":"auto",)"
            R"("llama_build":"","model":"/m/a.gguf","n_gpu_layers":-1,"n_threads":0,)"
            R"("n_ubatch":512,"rpc":[]})");
}

TEST(WorkerProtocol, OpenCarriesEveryOnWireFieldInVersion4sBytes) {
  const engine::ArmSettings s = every_field_changed(1);
  const wire::Message m = wire::encode(wire::Open{s, 96});
  // Open's bytes are version 1's with the server settings before n_ctx (version 2 added a list
  // to Decode, version 3 its start and stop point, version 4 the server settings).
  EXPECT_EQ(m.body, version_4_open(s, 96));
  EXPECT_EQ(wire::kVersion, 4u);
  const wire::Open back = wire::decode_open(m);
  EXPECT_EQ(back.n_ctx, 96);
  std::vector<std::string> off_wire;
  engine::for_each_arm_field([&](const auto& field) {
    if (!field.info.on_wire) off_wire.emplace_back(field.info.key);
  });
  // The worker is the other build: it is never told which, and reads it as "this build".
  EXPECT_EQ(off_wire, std::vector<std::string>{"llama_build"});
  EXPECT_EQ(differing(back.settings, s), off_wire);
  EXPECT_EQ(back.settings.llama_build, "");
  wire::Message cut = m;
  cut.body.pop_back();
  EXPECT_THROW(wire::decode_open(cut), RuntimeError);
}

TEST(ArmConfig, EveryFieldRoundTripsThroughTheFlags) {
  const engine::ArmSettings shared = every_field_changed(1), own_a = every_field_changed(2);
  std::vector<std::string> args = flags_for(shared, "");
  for (const auto& f : flags_for(own_a, "a-")) args.push_back(f);
  const Parsed p = parse_arm_flags(args);
  // A's own flags win over the shared ones; B has none of its own and takes the shared.
  engine::ArmSettings want_a = own_a, want_b = shared;
  want_a.model = want_b.model = "x.gguf";
  EXPECT_EQ(differing(cli::resolve_arm("x.gguf", p.shared, p.a), want_a), std::vector<std::string>{});
  EXPECT_EQ(differing(cli::resolve_arm("x.gguf", p.shared, p.b), want_b), std::vector<std::string>{});
  // No flag: llama.cpp's defaults.
  const Parsed none = parse_arm_flags({});
  engine::ArmSettings want;
  want.model = "x.gguf";
  EXPECT_EQ(cli::resolve_arm("x.gguf", none.shared, none.b), want);
}

TEST(ArmConfig, FlagsAreInTheArmsGroupWithLlamaCppsSpellings) {
  CLI::App app;
  cli::ArmFlags shared, a;
  cli::add_arm_flags(app, shared, "");
  cli::add_arm_flags(app, a, "a-");
  size_t n = 0;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_name() == "--help") continue;
    EXPECT_EQ(o->get_group(), "Arms") << o->get_name();
    ++n;
  }
  size_t with_flags = 0;
  engine::for_each_arm_field([&](const auto& field) { with_flags += *field.info.flags != '\0'; });
  EXPECT_EQ(n, 2 * with_flags + 2);  // and --server, --a-server: the preset
  for (const char* name : {"-t", "--threads", "--ctk", "--ngl", "--dev", "--rpc", "--llama-build",
                           "--a-t", "--a-threads", "--a-ctk", "--a-llama-build"}) {
    EXPECT_NE(app.get_option_no_throw(name), nullptr) << name;
  }
  EXPECT_EQ(app.get_option_no_throw("-a-t"), nullptr);
  std::vector<std::string> argv = {"heterodyne", "-ctk", "q8_0", "-ngl=3", "-dev", "x", "-ub", "7",
                                   "-fa", "on", "-ctv", "f16", "-t", "2", "-rpc", "h:1"};
  std::vector<char*> argp;
  for (auto& s : argv) argp.push_back(s.data());
  EXPECT_EQ(cli::normalize_llama_flags(static_cast<int>(argp.size()), argp.data()),
            (std::vector<std::string>{"heterodyne", "--ctk", "q8_0", "--ngl=3", "--dev", "x",
                                      "--ub", "7", "--fa", "on", "--ctv", "f16", "-t", "2",
                                      "-rpc", "h:1"}));
}

TEST(ArmConfig, AFlagAFieldRefusesNamesTheFlag) {
  auto refused = [](const std::vector<std::string>& args, bool own_b) {
    const Parsed p = parse_arm_flags(args);
    try {
      (void)cli::resolve_arm("x.gguf", p.shared, own_b ? p.b : p.a);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused({"-t", "0"}, false), "--threads must be at least 1, not 0");
  EXPECT_EQ(refused({"--b-t=-3"}, true), "--b-threads must be at least 1, not -3");
  EXPECT_EQ(refused({"--b-rpc", "h:1,,h:2"}, true), "--b-rpc list 'h:1,,h:2' has an empty entry");
  EXPECT_EQ(refused({"--rpc", ","}, true), "--rpc list ',' has an empty entry");
  const Parsed p = parse_arm_flags({"--dev", "CUDA0", "--b-ngl=-1"});
  EXPECT_EQ(cli::resolve_arm("x", p.shared, p.b).device, "cuda0");
  EXPECT_EQ(cli::resolve_arm("x", p.shared, p.b).n_gpu_layers, -1);
}

TEST(SweepSettings, TheNamesAreTheStoredOnesAndEveryFieldCanBeAttributed) {
  // Stored sweeps name their settings and count mask bits in this order.
  EXPECT_EQ(run::sweep_setting_names(),
            (std::vector<std::string>{"model", "cache_type_k", "cache_type_v", "flash_attn",
                                      "n_ubatch", "n_threads", "device", "n_gpu_layers", "rpc",
                                      "llama_build", "slots", "kv_unified", "slot", "neighbours",
                                      "neighbour_seed", "n_batch", "prompt_cache", "cache_reuse"}));
  EXPECT_EQ(run::sweep_setting_names(), engine::arm_field_keys());
  const engine::ArmSettings a = every_field_changed(1), b = every_field_changed(2);
  const auto names = run::differing_settings(a, b);
  EXPECT_EQ(names, run::sweep_setting_names());
  for (size_t i = 0; i < names.size(); ++i) {
    const engine::ArmSettings c = run::combination(a, b, names, 1u << i);
    EXPECT_EQ(differing(a, c), std::vector<std::string>{names[i]});
    EXPECT_EQ(differing(b, c).size(), names.size() - 1) << names[i];
  }
  EXPECT_EQ(run::combination(a, b, names, (1u << names.size()) - 1), b);
}

TEST(Floor, TheConfigHoldsTheWholeArmAndAnOldOneReadsAsThisBinarysCpu) {
  const auto old = nlohmann::json::parse(R"({"cache_type_k":"q4_0","cache_type_v":"f16",
      "chunk":64,"flash_attn":["on","off"],"max_chunks":2,"model":"/m/a.gguf",
      "reference_ubatch":32,"score_from":"1","text_file":"/t.txt","threads":[1,2],
      "ubatches":[1,2,3]})");
  const run::FloorConfig c = run::floor_config_from_json(old);
  EXPECT_EQ(c.arm.model, "/m/a.gguf");
  EXPECT_EQ(c.arm.cache_type_k, "q4_0");
  EXPECT_EQ(c.arm.device, "cpu");
  EXPECT_TRUE(c.arm.rpc.empty() && c.arm.llama_build.empty());
  EXPECT_EQ(c.flash_attn, (std::vector<std::string>{"on", "off"}));
  EXPECT_EQ(c.threads, (std::vector<int>{1, 2}));
  // Written again, it is the old config exactly: the arm's later settings are written only
  // when they are not their defaults.
  const nlohmann::json again = run::to_json(c);
  EXPECT_EQ(again, old);
  // Every setting but the swept ones round-trips.
  run::FloorConfig n = c;
  n.arm = every_field_changed(3);
  const run::FloorConfig back = run::floor_config_from_json(nlohmann::json::parse(run::to_json(n).dump()));
  std::vector<std::string> lost = differing(back.arm, n.arm);
  EXPECT_EQ(std::set<std::string>(lost.begin(), lost.end()), run::floor_swept_settings());
  EXPECT_EQ(back.flash_attn, c.flash_attn);  // the list, not the arm's value
}

TEST(Floor, TakesTheArmFlagsDiffTakesButTheSweptOnes) {
  HD_REQUIRE_SHARED();
  const std::string m = test::shared_path("models/stories260K.gguf");
  const std::string t = test::shared_path("corpora/tom-sawyer.txt");
  const std::string out = test::temp_dir("floor-flags") + "/f.hdy";
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"floor", "-m", m, "-f", t, "--ub", "4,8", "--chunk", "16",
                                     "--max-chunks", "1", "-o", out, "--force"};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_cli(args);
  };
  // The flag reaches the arm: a device this build lacks is refused by name.
  auto r = run({"-dev", "NoSuchDevice0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("nosuchdevice0"), std::string::npos) << r.err;
  r = run({"--rpc", "h:1,"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--rpc list 'h:1,' has an empty entry"), std::string::npos) << r.err;
  r = run({"--llama-build", "x'y"});  // refused before any build starts
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("build spec may not contain quotes"), std::string::npos) << r.err;
  // They are stored in the config; a floor on this binary's CPU runs as before.
  r = run({"-ngl", "3", "-ctv", "f32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto config = nlohmann::json::parse(store::Experiment::open(out, false).required_meta("config"));
  EXPECT_EQ(config["n_gpu_layers"], 3);
  EXPECT_EQ(config["cache_type_v"], "f32");
  EXPECT_FALSE(config.contains("device"));  // the default: left out, read as "cpu"
  EXPECT_EQ(config["flash_attn"], nlohmann::json::array({"auto"}));
  r = test::run_cli({"verify", out});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}
