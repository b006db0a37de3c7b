// A CPU stand-in for the little of CUDA that cl_on_cuda.cu and cl_to_cuda.py's output use, so
// that emulate.sh can run the twin end to end on a machine without a GPU (arguments, sizes,
// barriers, atomics, FINALIZE and the harness's check) before spending device time. Blocks run
// one after another, the work items of a block as std::threads, so a `static` variable is the
// block's shared memory. Slow: for small inputs only. Not a model of performance.
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// ---- device-code spellings ----
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx;
inline thread_local dim3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;
inline thread_local std::barrier<>* gpuagg_emulated_barrier = nullptr;
inline void __syncthreads() { gpuagg_emulated_barrier->arrive_and_wait(); }
// The dynamic shared memory of the block that runs (extern __shared__ arrays refer to it).
alignas(16) inline unsigned char gpuagg_local_arena[256 * 1024];

template <class T>
T gpuagg_emulated_fetch(T* p, T x, int op) {
  std::atomic_ref<T> a(*p);
  switch (op) {
    case 0: return a.fetch_add(x);
    case 1: return a.exchange(x);
    case 4: return a.fetch_and(x);
    case 5: return a.fetch_or(x);
    case 6: return a.fetch_xor(x);
    default: {
      T seen = a.load();
      while ((op == 2 ? x < seen : seen < x) && !a.compare_exchange_weak(seen, x)) {
      }
      return seen;
    }
  }
}
#define GPUAGG_EMULATED_ATOMICS(T)                                                              \
  inline T atomicAdd(T* p, T x) { return gpuagg_emulated_fetch(p, x, 0); }                    \
  inline T atomicExch(T* p, T x) { return gpuagg_emulated_fetch(p, x, 1); }                   \
  inline T atomicMin(T* p, T x) { return gpuagg_emulated_fetch(p, x, 2); }                    \
  inline T atomicMax(T* p, T x) { return gpuagg_emulated_fetch(p, x, 3); }                    \
  inline T atomicAnd(T* p, T x) { return gpuagg_emulated_fetch(p, x, 4); }                    \
  inline T atomicOr(T* p, T x) { return gpuagg_emulated_fetch(p, x, 5); }                     \
  inline T atomicXor(T* p, T x) { return gpuagg_emulated_fetch(p, x, 6); }                    \
  inline T atomicCAS(T* p, T expected, T desired) {                                           \
    std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);                        \
    return expected;                                                                          \
  }
GPUAGG_EMULATED_ATOMICS(unsigned int)
GPUAGG_EMULATED_ATOMICS(int)
GPUAGG_EMULATED_ATOMICS(unsigned long long)
GPUAGG_EMULATED_ATOMICS(long long)
#undef GPUAGG_EMULATED_ATOMICS

inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }

// ---- kernels by name: emulate.sh registers each program's kernels under its cubin name ----
struct gpuagg_emulated_kernel {
  std::size_t params = 0;
  void (*run)(const void* fn, void** args) = nullptr;
  const void* fn = nullptr;
};
inline std::map<std::string, std::map<std::string, gpuagg_emulated_kernel>>& gpuagg_emulated_programs() {
  static std::map<std::string, std::map<std::string, gpuagg_emulated_kernel>> programs;
  return programs;
}
template <class... P>
void gpuagg_emulated_call(const void* fn, void** args) {
  auto kernel = reinterpret_cast<void (*)(P...)>(const_cast<void*>(fn));
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_cvref_t<P>*>(args[I])...);
  }(std::index_sequence_for<P...>{});
}
template <class... P>
void gpuagg_emulated_register(const std::string& program, const std::string& name, void (*kernel)(P...)) {
  gpuagg_emulated_programs()[program][name] = {sizeof...(P), &gpuagg_emulated_call<P...>,
                                               reinterpret_cast<const void*>(kernel)};
}

// ---- runtime API ----
enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
struct cudaDeviceProp {
  char name[256];
  int multiProcessorCount;
  std::size_t totalGlobalMem;
  std::size_t sharedMemPerBlock;
  int l2CacheSize;
};
using cudaEvent_t = std::chrono::steady_clock::time_point*;
inline const char* cudaGetErrorName(cudaError_t) { return "cudaErrorEmulated"; }
inline const char* cudaGetErrorString(cudaError_t) { return "emulation"; }
inline cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  *p = std::calloc(1, bytes);
  return *p ? cudaSuccess : cudaErrorInvalidValue;
}
inline cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind) {
  std::memcpy(to, from, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int value, std::size_t bytes) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  std::strcpy(p->name, "CPU emulation");
  p->multiProcessorCount = std::getenv("EMULATED_SMS") ? std::atoi(std::getenv("EMULATED_SMS")) : 2;
  p->totalGlobalMem = std::size_t{8} << 30;
  p->sharedMemPerBlock = 48 * 1024;
  p->l2CacheSize = 50 << 20;
  return cudaSuccess;
}
inline cudaError_t cudaProfilerStart() { return cudaSuccess; }
inline cudaError_t cudaProfilerStop() { return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new std::chrono::steady_clock::time_point{};
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, void* = nullptr) {
  *e = std::chrono::steady_clock::now();
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(*b - *a).count();
  return cudaSuccess;
}

// ---- driver API ----
enum CUresult { CUDA_SUCCESS = 0, CUDA_ERROR_NOT_FOUND = 500 };
enum CUfunction_attribute {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
  CU_FUNC_ATTRIBUTE_NUM_REGS,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
};
using CUmodule = const std::map<std::string, gpuagg_emulated_kernel>*;
using CUfunction = const gpuagg_emulated_kernel*;
using CUstream = void*;
inline CUresult cuGetErrorName(CUresult, const char** s) {
  *s = "CUDA_ERROR_EMULATED";
  return CUDA_SUCCESS;
}
inline CUresult cuGetErrorString(CUresult, const char** s) {
  *s = "emulation: no such program or kernel";
  return CUDA_SUCCESS;
}
inline CUresult cuModuleLoad(CUmodule* m, const char* path) {
  std::string name = path;
  name = name.substr(name.find_last_of('/') + 1);
  name = name.substr(0, name.find('.'));
  auto found = gpuagg_emulated_programs().find(name);
  if (found == gpuagg_emulated_programs().end()) return CUDA_ERROR_NOT_FOUND;
  *m = &found->second;
  return CUDA_SUCCESS;
}
inline CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
inline CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  auto found = m->find(name);
  if (found == m->end()) return CUDA_ERROR_NOT_FOUND;
  *f = &found->second;
  return CUDA_SUCCESS;
}
inline CUresult cuFuncGetAttribute(int* value, CUfunction_attribute a, CUfunction) {
  *value = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
  return CUDA_SUCCESS;
}
inline CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) { return CUDA_SUCCESS; }
inline CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction, int, std::size_t) {
  *blocks = 1;
  return CUDA_SUCCESS;
}
inline CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream, void** args, void**) {
  if (gy != 1 || gz != 1 || by != 1 || bz != 1 || shared > sizeof(gpuagg_local_arena)) return CUDA_ERROR_NOT_FOUND;
  gridDim = {gx, 1, 1};
  blockDim = {bx, 1, 1};
  for (unsigned b = 0; b < gx; ++b) {
    std::barrier<> sync(bx);
    std::vector<std::thread> items;
    for (unsigned t = 0; t < bx; ++t) {
      items.emplace_back([&, b, t] {
        threadIdx = {t, 0, 0};
        blockIdx = {b, 0, 0};
        gpuagg_emulated_barrier = &sync;
        f->run(f->fn, args);
        sync.arrive_and_drop();
      });
    }
    for (auto& item : items) item.join();
  }
  return CUDA_SUCCESS;
}
