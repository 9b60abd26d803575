// PTX wrappers for the Hopper warpgroup MMA (wgmma.mma_async, PTX ISA "Asynchronous Warpgroup
// Level Matrix Multiply-Accumulate"): the fence / commit / wait protocol, shared memory matrix
// descriptors in the 128-byte swizzle, and m64n256k16 with f32 accumulation. sm_90a only: a
// file that includes this is built for 90a-real (kernels/cuda/sm90a/CMakeLists.txt) and its
// kernels guard their bodies with __CUDA_ARCH_FEAT_SM90_ALL.
//
// The protocol, per warpgroup (all 128 threads execute each of these, .sync.aligned):
//   wgmma_fence() before the first wgmma, and between a register access to an accumulator and a
//   wgmma that uses it (successive wgmma of one shape on the same accumulator need none);
//   wgmma_commit() closes the wgmma issued since the last commit into a group;
//   wgmma_wait<N>() returns once at most N groups are pending; the accumulators of a group may
//   be read only after it completed (then fence_operand on each).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace dnnb::cuda_kernels {

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving accesses of an accumulator across the asynchronous MMAs.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
// wgmma reads shared memory through the async proxy: shared memory written by ordinary stores
// (the generic proxy) must be fenced before a wgmma reads it. TMA writes need no such fence.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Shared memory matrix descriptors (PTX ISA, "Matrix Descriptor Format"), 128-byte swizzle.
__device__ __forceinline__ uint64_t desc_encode(uint32_t x) { return (x & 0x3FFFFu) >> 4; }
// K-major: LBO unused (1), SBO 1024 bytes between 8-row groups.
__device__ __forceinline__ uint64_t desc_k_major(uint32_t addr) {
  return desc_encode(addr) | (uint64_t{1} << 16) | (desc_encode(1024) << 32) | (uint64_t{1} << 62);
}
// N-major: LBO `atom_bytes` between 64-element N atoms (a GEMM's slabs), SBO 1024 between 8-row
// k groups.
__device__ __forceinline__ uint64_t desc_n_major(uint32_t addr, uint32_t atom_bytes) {
  return desc_encode(addr) | (desc_encode(atom_bytes) << 16) | (desc_encode(1024) << 32) | (uint64_t{1} << 62);
}

// d (64 x 256 per warpgroup, f32) += A (64 x 16, K-major, descriptor da) times B (16 x 256,
// descriptor db: K-major when kTransB == 0, N-major when 1). scale-d = 1: accumulate.
template <typename T, int kTransB>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "16-bit inputs");
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
#define DNNB_WGMMA_256(TYPE)                                                                  \
  asm volatile(                                                                               \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %131, 0;\n"                                              \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " {"                          \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63," \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79," \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95," \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" \
      "}, %128, %129, p, 1, 1, 0, %130;\n}\n"                                                    \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
      : "l"(da), "l"(db), "n"(kTransB), "r"(1))
  if constexpr (kBf16) {
    DNNB_WGMMA_256("bf16");
  } else {
    DNNB_WGMMA_256("f16");
  }
#undef DNNB_WGMMA_256
}

}  // namespace dnnb::cuda_kernels
