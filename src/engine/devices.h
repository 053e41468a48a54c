// Where an arm's weights and compute live: the CPU, a GPU this build has a backend for
// (cuda0, vulkan0, …), or llama.cpp RPC servers on other machines.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hd::engine {

// What llama_model_params is given: the devices (ggml names, e.g. "CUDA0", "RPC1"; empty for
// the CPU alone) and how many layers go there (-ngl; negative: all of them).
struct Placement {
  std::vector<std::string> devices;
  int n_gpu_layers = 0;
  bool on_cpu() const { return devices.empty(); }
  bool operator==(const Placement&) const = default;
};

// The devices this build and machine offer, as -dev spells them (lower case, e.g. "cuda0"),
// with llama.cpp's description: {"name","description","type","memory_total"}.
nlohmann::json available_devices();

// Resolves a device name the way users type it ("cpu", "cuda0", "CUDA0", "vulkan1") and -ngl
// into a Placement. Throws InputError naming the devices that exist when it is not one.
Placement device_placement(const std::string& device, int n_gpu_layers);

// Registers each llama.cpp RPC server ("host:port", checked by check_settings) and places every layer on their devices in
// the order given. A server that cannot be reached is an InputError here (ggml-rpc itself
// would abort the process). n_gpu_layers < 0: all layers.
Placement rpc_placement(const std::vector<std::string>& endpoints, int n_gpu_layers);

// What provenance records about the devices of a placement: name, description, memory,
// and for GPU backends what ggml reports of the build (e.g. CUDA architectures).
nlohmann::json placement_facts(const Placement& p);

}  // namespace hd::engine
