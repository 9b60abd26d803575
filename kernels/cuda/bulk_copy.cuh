// mbarriers and the Hopper bulk-copy engine (1-D `cp.async.bulk`, no tensor map), shared by
// every kernel that streams through shared memory with them: the sm_90a attention and GEMM
// (sm90a/tma.cuh adds the tensor-map copies), cross_entropy's bulk-copy rows and embedding's
// row gather. PTX of the "mbarrier" and "cp.async.bulk" sections of the PTX ISA; sm_90 and later.
//
// An mbarrier is 8 bytes of shared memory, addressed by its shared-window address (a uint32_t,
// smem_addr()). Its phase completes when the expected arrivals have arrived and, with
// expect_tx, the transaction bytes of the copies that name it have landed; mbar_wait(bar,
// parity) returns once the phase of that parity has completed (phase 0 first, then 1, 0, ...).
// A bulk copy's addresses and size are multiples of 16 bytes.
#pragma once
#include <cstdint>

namespace dnnb::cuda_kernels {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// After the barriers of a block are initialised (one thread), before any thread or copy uses
// them: the initialisation made visible to the async proxy (the copies' complete_tx).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!done);
}

// Orders this thread's earlier shared-memory accesses through the generic proxy (ordinary loads
// and stores) before its later async-proxy ones (bulk copies into or out of the same bytes).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// `bytes` from global `src` into shared `dst`; completes that many transaction bytes on `bar`
// (armed by the caller with mbar_arrive_expect_tx).
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(static_cast<uint64_t>(__cvta_generic_to_global(src))), "r"(bytes), "r"(bar)
               : "memory");
}

// `bytes` from shared `src` to global `dst`, in the issuing thread's current bulk group; the
// group ends with bulk_commit() and is waited for with bulk_wait_read<N>() (its shared bytes
// may be overwritten) or bulk_wait<N>() (its global writes done).
__device__ __forceinline__ void bulk_store(void* dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(
                   static_cast<uint64_t>(__cvta_generic_to_global(dst))),
               "r"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Until at most N of this thread's committed bulk groups still read shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Until at most N of this thread's committed bulk groups are incomplete.
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace dnnb::cuda_kernels
