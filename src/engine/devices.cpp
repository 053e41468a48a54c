#include "engine/devices.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <set>

#include "engine/system.h"
#include "errors.h"
#include "ggml-backend.h"
#include "ggml-rpc.h"
#ifdef HD_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace hd::engine {

static std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

static const char* type_name(enum ggml_backend_dev_type t) {
  switch (t) {
    case GGML_BACKEND_DEVICE_TYPE_CPU: return "cpu";
    case GGML_BACKEND_DEVICE_TYPE_GPU: return "gpu";
    case GGML_BACKEND_DEVICE_TYPE_ACCEL: return "accel";
    default: return "other";
  }
}

#ifdef HD_WITH_CUDA
// What ggml does not report of a CUDA device: the driver and the compute capability.
// ggml numbers CUDA devices as the runtime does ("CUDA0" is device 0).
static void add_cuda_facts(nlohmann::json& j, const std::string& name) {
  if (name.rfind("CUDA", 0) != 0) return;
  const int index = std::atoi(name.c_str() + 4);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, index) == cudaSuccess) {
    j["compute_capability"] = std::to_string(p.major) + "." + std::to_string(p.minor);
  }
  j["cuda_driver"] = std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
  j["cuda_runtime"] = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
}
#endif

static nlohmann::json device_json(ggml_backend_dev_t d) {
  size_t free = 0, total = 0;
  ggml_backend_dev_memory(d, &free, &total);
  nlohmann::json j = {{"name", lower(ggml_backend_dev_name(d))},
                      {"description", ggml_backend_dev_description(d)},
                      {"type", type_name(ggml_backend_dev_type(d))},
                      {"memory_total", total}};
  // The backend's build facts (CUDA: the architectures compiled for, e.g. "ARCHS 890").
  ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(d);
  auto features = reinterpret_cast<ggml_backend_get_features_t>(
      ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features"));
  if (features != nullptr && ggml_backend_dev_type(d) != GGML_BACKEND_DEVICE_TYPE_CPU) {
    nlohmann::json f = nlohmann::json::object();
    for (auto* p = features(reg); p != nullptr && p->name != nullptr; ++p) f[p->name] = p->value;
    j["backend_features"] = f;
  }
  ggml_backend_dev_props props{};
  ggml_backend_dev_get_props(d, &props);
  if (props.device_id != nullptr) j["device_id"] = props.device_id;
#ifdef HD_WITH_CUDA
  add_cuda_facts(j, ggml_backend_dev_name(d));
#endif
  return j;
}

nlohmann::json available_devices() {
  system_init();
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) out.push_back(device_json(ggml_backend_dev_get(i)));
  return out;
}

static ggml_backend_dev_t find_device(const std::string& name) {
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t d = ggml_backend_dev_get(i);
    if (lower(ggml_backend_dev_name(d)) == lower(name)) return d;
  }
  return nullptr;
}

Placement device_placement(const std::string& device, int n_gpu_layers) {
  system_init();
  if (device.empty() || lower(device) == "cpu") return {};
  ggml_backend_dev_t d = find_device(device);
  if (d == nullptr || ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_CPU) {
    std::string have = "cpu";
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
      ggml_backend_dev_t x = ggml_backend_dev_get(i);
      if (ggml_backend_dev_type(x) != GGML_BACKEND_DEVICE_TYPE_CPU) {
        have += ", " + lower(ggml_backend_dev_name(x));
      }
    }
    throw InputError("no device '" + device + "' in this build (it has: " + have +
                     "; GPU backends need a build with HETERODYNE_CUDA or HETERODYNE_VULKAN)");
  }
  return {{ggml_backend_dev_name(d)}, n_gpu_layers};
}

// A TCP connect with a short timeout: ggml-rpc aborts the whole process on a refused
// connection, so we look first and say which server is missing.
// `endpoint` is host:port, as check_settings made sure.
static void check_reachable(const std::string& endpoint) {
  const auto colon = endpoint.rfind(':');
  const std::string host = endpoint.substr(0, colon), port = endpoint.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) {
    throw InputError("RPC server '" + endpoint + "': cannot resolve " + host);
  }
  bool ok = false;
  for (addrinfo* a = res; a != nullptr && !ok; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ok = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    ::close(fd);
  }
  freeaddrinfo(res);
  if (!ok) {
    throw InputError("cannot reach the RPC server at " + endpoint +
                     " (is ggml-rpc-server running there? make rpc-server builds it)");
  }
}

// The devices an RPC server offers. llama.cpp since late 2025 has ggml_backend_rpc_add_server
// (a registry per server, possibly several devices); earlier builds, which a worker may link,
// have ggml_backend_rpc_add_device (one device). Looked up by name, so both compile.
static std::vector<ggml_backend_dev_t> rpc_devices(const std::string& endpoint) {
  using add_server_t = ggml_backend_reg_t (*)(const char*);
  using add_device_t = ggml_backend_dev_t (*)(const char*);
  ggml_backend_reg_t rpc = ggml_backend_rpc_reg();
  std::vector<ggml_backend_dev_t> out;
  if (auto add_server = reinterpret_cast<add_server_t>(
          ggml_backend_reg_get_proc_address(rpc, "ggml_backend_rpc_add_server"))) {
    ggml_backend_reg_t reg = add_server(endpoint.c_str());
    if (reg != nullptr) {
      for (size_t i = 0; i < ggml_backend_reg_dev_count(reg); ++i) out.push_back(ggml_backend_reg_dev_get(reg, i));
    }
  } else if (auto add_device = reinterpret_cast<add_device_t>(
                 ggml_backend_reg_get_proc_address(rpc, "ggml_backend_rpc_add_device"))) {
    if (ggml_backend_dev_t d = add_device(endpoint.c_str())) out.push_back(d);
  }
  if (out.empty()) throw InputError("the RPC server at " + endpoint + " offers no device");
  return out;
}

Placement rpc_placement(const std::vector<std::string>& endpoints, int n_gpu_layers) {
  system_init();
  static std::mutex mutex;
  static std::set<std::string> connected;  // this process already holds their one session
  std::lock_guard lock(mutex);
  Placement p;
  p.n_gpu_layers = n_gpu_layers;
  for (const auto& e : endpoints) {
    // ggml-rpc-server serves one client at a time: a probe while we hold the session would
    // wait in its queue, so only servers not yet connected are probed.
    if (!connected.count(e)) check_reachable(e);
    for (ggml_backend_dev_t d : rpc_devices(e)) {
      bool known = false;
      for (size_t i = 0; i < ggml_backend_dev_count(); ++i) known |= ggml_backend_dev_get(i) == d;
      if (!known) ggml_backend_device_register(d);
      p.devices.push_back(ggml_backend_dev_name(d));
    }
    connected.insert(e);
  }
  return p;
}

nlohmann::json placement_facts(const Placement& p) {
  nlohmann::json j = {{"n_gpu_layers", p.n_gpu_layers}, {"devices", nlohmann::json::array()}};
  if (p.on_cpu()) {
    j["devices"].push_back({{"name", "cpu"}, {"description", cpu_model()}, {"type", "cpu"}});
    return j;
  }
  for (const auto& name : p.devices) {
    if (ggml_backend_dev_t d = find_device(name)) j["devices"].push_back(device_json(d));
  }
  return j;
}

}  // namespace hd::engine
