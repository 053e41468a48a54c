#include "analysis/kl_kernel.h"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace hd::analysis::kernel {

// GCC's and clang's spellings of "compile these functions for this instruction set" (clang
// builds the fuzz targets).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512dq,avx512vl"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512vl,prefer-vector-width=512")
#endif
namespace avx512 {
constexpr size_t kWidth = 8;
#include "analysis/kl_kernel_body.inc"
}
#if defined(__clang__)
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
namespace avx2 {
constexpr size_t kWidth = 4;
#include "analysis/kl_kernel_body.inc"
}
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace baseline {
constexpr size_t kWidth = 2;
#include "analysis/kl_kernel_body.inc"
}

namespace {

#define HD_KERNEL(ns) \
  Kernel { #ns, ns::max_of, ns::exp_sum, ns::exp_sum_into, ns::kl_terms }
const Kernel kAvx512 = HD_KERNEL(avx512);
const Kernel kAvx2 = HD_KERNEL(avx2);
const Kernel kBaseline = HD_KERNEL(baseline);
#undef HD_KERNEL

std::vector<const Kernel*> detect() {
  std::vector<const Kernel*> k;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    k.push_back(&kAvx512);
  }
  if (__builtin_cpu_supports("avx2")) k.push_back(&kAvx2);
  k.push_back(&kBaseline);
  return k;
}

const std::vector<const Kernel*>& all() {
  static const std::vector<const Kernel*> k = detect();
  return k;
}

}  // namespace

const Kernel& best() { return *all().front(); }

std::span<const Kernel* const> supported() { return all(); }

}  // namespace hd::analysis::kernel
