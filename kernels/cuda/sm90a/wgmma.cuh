// PTX wrappers for the Hopper warpgroup MMA (wgmma.mma_async, PTX ISA "Asynchronous Warpgroup
// Level Matrix Multiply-Accumulate"): the fence / commit / wait protocol, shared memory matrix
// descriptors in the 128-byte swizzle, and m64nNk16 (N in {64, 128, 256}) with f32 accumulation,
// A from shared memory or from registers; m64nNk32 of 8-bit operands (s8 with s32 accumulation,
// e4m3 / e5m2 with f32) from shared memory. sm_90a only: a file that includes this is built for
// 90a-real (kernels/cuda/sm90a/CMakeLists.txt) and its kernels guard their bodies with
// __CUDA_ARCH_FEAT_SM90_ALL.
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

#include "kernels/cuda/bulk_copy.cuh"

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
// (the generic proxy) must be fenced (bulk_copy.cuh's fence_proxy_async_shared) before a wgmma
// reads it. TMA writes need no such fence.

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

// The accumulator fragment of m64nNk16 with f32 accumulation (PTX ISA, "Matrix Fragments for
// wgmma.mma_async.m64nNk16"): thread t of the warpgroup (warp w = t / 32, g = (t % 32) / 4,
// q = t % 4) holds d[4j], d[4j + 1] = rows 16w + g, columns 8j + 2q + {0, 1}, and d[4j + 2],
// d[4j + 3] = the same columns of row 16w + g + 8, for j = 0 .. N/8 - 1: N/2 registers.
// The A fragment of the register form (16-bit A, 4 registers of 2 elements, the lower k index in
// the low half): a[0] = row 16w + g, k 2q + {0, 1}; a[1] = row 16w + g + 8, same k; a[2] = row
// 16w + g, k 8 + 2q + {0, 1}; a[3] = row 16w + g + 8, k 8 + 2q + {0, 1}. So the accumulator
// columns 16i .. 16i + 15 (d[8i .. 8i + 7]), rounded in pairs to 16 bits, are the A fragment of
// k step i of a following product whose k runs over those columns (attention's P V).

// The operand lists: "%0, %1, ..., %(n-1)" of n accumulator registers, and their "+f" bindings.
#define DNNB_WGMMA_D32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define DNNB_WGMMA_D64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define DNNB_WGMMA_D128 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define DNNB_WGMMA_F8(i)                                                                                  \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define DNNB_WGMMA_F32(i) DNNB_WGMMA_F8(i), DNNB_WGMMA_F8(i + 8), DNNB_WGMMA_F8(i + 16), DNNB_WGMMA_F8(i + 24)
#define DNNB_WGMMA_C32 DNNB_WGMMA_F32(0)
#define DNNB_WGMMA_C64 DNNB_WGMMA_F32(0), DNNB_WGMMA_F32(32)
#define DNNB_WGMMA_C128 DNNB_WGMMA_F32(0), DNNB_WGMMA_F32(32), DNNB_WGMMA_F32(64), DNNB_WGMMA_F32(96)

// A and B from shared memory descriptors (imm-trans-a 0: A K-major), scale-d from a register:
// operands (accumulators, a-desc, b-desc, imm-trans-b, scale-d) numbered by the caller.
#define DNNB_WGMMA_SS_ASM(N, TYPE, REGS, DA, DB, TRANS_B, SCALE_D)                        \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE_D ", 0;\n"                                       \
  "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" REGS "}, " DA ", " DB \
  ", p, 1, 1, 0, " TRANS_B ";\n}\n"
// A from 4 registers, B from a shared memory descriptor.
#define DNNB_WGMMA_RS_ASM(N, TYPE, REGS, A0, A1, A2, A3, DB, TRANS_B, SCALE_D)                               \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE_D ", 0;\n"                                                          \
  "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" REGS "}, {" A0 ", " A1 ", " A2 ", " A3 \
  "}, " DB ", p, 1, 1, " TRANS_B ";\n}\n"

// d (64 x N per warpgroup, f32; N/2 registers a thread) = A (64 x 16, K-major, descriptor da)
// times B (16 x N, descriptor db: K-major when kTransB == 0, N-major when 1), plus d when
// scale_d != 0 (0: d is overwritten, its old value unread). N in {64, 128, 256}.
template <typename T, int N, int kTransB>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, uint32_t scale_d) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "16-bit inputs");
  static_assert(N == 64 || N == 128 || N == 256, "the shapes the kernels use");
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  if constexpr (N == 64) {
    if constexpr (kBf16)
      asm volatile(DNNB_WGMMA_SS_ASM(64, "bf16", DNNB_WGMMA_D32, "%32", "%33", "%34", "%35")
                   : DNNB_WGMMA_C32 : "l"(da), "l"(db), "n"(kTransB), "r"(scale_d));
    else
      asm volatile(DNNB_WGMMA_SS_ASM(64, "f16", DNNB_WGMMA_D32, "%32", "%33", "%34", "%35")
                   : DNNB_WGMMA_C32 : "l"(da), "l"(db), "n"(kTransB), "r"(scale_d));
  } else if constexpr (N == 128) {
    if constexpr (kBf16)
      asm volatile(DNNB_WGMMA_SS_ASM(128, "bf16", DNNB_WGMMA_D64, "%64", "%65", "%66", "%67")
                   : DNNB_WGMMA_C64 : "l"(da), "l"(db), "n"(kTransB), "r"(scale_d));
    else
      asm volatile(DNNB_WGMMA_SS_ASM(128, "f16", DNNB_WGMMA_D64, "%64", "%65", "%66", "%67")
                   : DNNB_WGMMA_C64 : "l"(da), "l"(db), "n"(kTransB), "r"(scale_d));
  } else {
    if constexpr (kBf16)
      asm volatile(DNNB_WGMMA_SS_ASM(256, "bf16", DNNB_WGMMA_D128, "%128", "%129", "%130", "%131")
                   : DNNB_WGMMA_C128 : "l"(da), "l"(db), "n"(kTransB), "r"(scale_d));
    else
      asm volatile(DNNB_WGMMA_SS_ASM(256, "f16", DNNB_WGMMA_D128, "%128", "%129", "%130", "%131")
                   : DNNB_WGMMA_C128 : "l"(da), "l"(db), "n"(kTransB), "r"(scale_d));
  }
}

// d (64 x N, f32) = A (64 x 16, 16-bit, from registers: the fragment above) times B (16 x N,
// descriptor db, K-major when kTransB == 0, N-major when 1), plus d when scale_d != 0. The
// registers of a and d may not be written until a wgmma_wait has seen this wgmma complete.
template <typename T, int N, int kTransB>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, uint32_t scale_d) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "16-bit inputs");
  static_assert(N == 64 || N == 128 || N == 256, "the shapes the kernels use");
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  if constexpr (N == 64) {
    if constexpr (kBf16)
      asm volatile(DNNB_WGMMA_RS_ASM(64, "bf16", DNNB_WGMMA_D32, "%32", "%33", "%34", "%35", "%36", "%37", "%38")
                   : DNNB_WGMMA_C32
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(kTransB), "r"(scale_d));
    else
      asm volatile(DNNB_WGMMA_RS_ASM(64, "f16", DNNB_WGMMA_D32, "%32", "%33", "%34", "%35", "%36", "%37", "%38")
                   : DNNB_WGMMA_C32
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(kTransB), "r"(scale_d));
  } else if constexpr (N == 128) {
    if constexpr (kBf16)
      asm volatile(DNNB_WGMMA_RS_ASM(128, "bf16", DNNB_WGMMA_D64, "%64", "%65", "%66", "%67", "%68", "%69", "%70")
                   : DNNB_WGMMA_C64
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(kTransB), "r"(scale_d));
    else
      asm volatile(DNNB_WGMMA_RS_ASM(128, "f16", DNNB_WGMMA_D64, "%64", "%65", "%66", "%67", "%68", "%69", "%70")
                   : DNNB_WGMMA_C64
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(kTransB), "r"(scale_d));
  } else {
    if constexpr (kBf16)
      asm volatile(
          DNNB_WGMMA_RS_ASM(256, "bf16", DNNB_WGMMA_D128, "%128", "%129", "%130", "%131", "%132", "%133", "%134")
          : DNNB_WGMMA_C128
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(kTransB), "r"(scale_d));
    else
      asm volatile(
          DNNB_WGMMA_RS_ASM(256, "f16", DNNB_WGMMA_D128, "%128", "%129", "%130", "%131", "%132", "%133", "%134")
          : DNNB_WGMMA_C128
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(kTransB), "r"(scale_d));
  }
}

// 8-bit operands, m64nNk32 (a k-step of 32 elements is 32 bytes, as 16 elements of a 16-bit
// type): both A and B K-major (the 8-bit forms have no transpose), scale-d from a register.
// Integer: s32 accumulators, s8 x s8 products (exact; wgmma wraps on overflow as integer adds
// do). FP8: f32 accumulators, e4m3 or e5m2 operands (mixed or not), imm-scale-a = imm-scale-b = 1.
#define DNNB_WGMMA_R8(i)                                                                                  \
  "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3]), "+r"(d[i + 4]), "+r"(d[i + 5]), "+r"(d[i + 6]), \
      "+r"(d[i + 7])
#define DNNB_WGMMA_R32(i) DNNB_WGMMA_R8(i), DNNB_WGMMA_R8(i + 8), DNNB_WGMMA_R8(i + 16), DNNB_WGMMA_R8(i + 24)
#define DNNB_WGMMA_SS8_ASM(N, TYPES, REGS, DA, DB, SCALE_D, IMMS)                                          \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE_D ", 0;\n"                                                      \
  "wgmma.mma_async.sync.aligned.m64n" #N "k32." TYPES " {" REGS "}, " DA ", " DB ", p" IMMS ";\n}\n"

// d (64 x 256 per warpgroup, s32; 128 registers a thread, the f32 fragment's places) = A (64 x 32
// s8, K-major, descriptor da) times B (32 x 256 s8, K-major, descriptor db), plus d when
// scale_d != 0.
__device__ __forceinline__ void wgmma_s8_m64n256k32(int32_t (&d)[128], uint64_t da, uint64_t db, uint32_t scale_d) {
  asm volatile(DNNB_WGMMA_SS8_ASM(256, "s32.s8.s8", DNNB_WGMMA_D128, "%128", "%129", "%130", "")
               : DNNB_WGMMA_R32(0), DNNB_WGMMA_R32(32), DNNB_WGMMA_R32(64), DNNB_WGMMA_R32(96)
               : "l"(da), "l"(db), "r"(scale_d));
}

// d (64 x 128 per warpgroup, f32; 64 registers a thread) = A (64 x 32, K-major) times B
// (32 x 128, K-major), each of them e4m3 (kAE4M3, kBE4M3) or e5m2, plus d when scale_d != 0.
template <bool kAE4M3, bool kBE4M3>
__device__ __forceinline__ void wgmma_f8_m64n128k32(float (&d)[64], uint64_t da, uint64_t db, uint32_t scale_d) {
  if constexpr (kAE4M3 && kBE4M3)
    asm volatile(DNNB_WGMMA_SS8_ASM(128, "f32.e4m3.e4m3", DNNB_WGMMA_D64, "%64", "%65", "%66", ", 1, 1")
                 : DNNB_WGMMA_C64 : "l"(da), "l"(db), "r"(scale_d));
  else if constexpr (kAE4M3)
    asm volatile(DNNB_WGMMA_SS8_ASM(128, "f32.e4m3.e5m2", DNNB_WGMMA_D64, "%64", "%65", "%66", ", 1, 1")
                 : DNNB_WGMMA_C64 : "l"(da), "l"(db), "r"(scale_d));
  else if constexpr (kBE4M3)
    asm volatile(DNNB_WGMMA_SS8_ASM(128, "f32.e5m2.e4m3", DNNB_WGMMA_D64, "%64", "%65", "%66", ", 1, 1")
                 : DNNB_WGMMA_C64 : "l"(da), "l"(db), "r"(scale_d));
  else
    asm volatile(DNNB_WGMMA_SS8_ASM(128, "f32.e5m2.e5m2", DNNB_WGMMA_D64, "%64", "%65", "%66", ", 1, 1")
                 : DNNB_WGMMA_C64 : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void fence_operand(int32_t& r) { asm volatile("" : "+r"(r)::"memory"); }

#undef DNNB_WGMMA_SS8_ASM
#undef DNNB_WGMMA_R32
#undef DNNB_WGMMA_R8
#undef DNNB_WGMMA_SS_ASM
#undef DNNB_WGMMA_RS_ASM
#undef DNNB_WGMMA_C32
#undef DNNB_WGMMA_C64
#undef DNNB_WGMMA_C128
#undef DNNB_WGMMA_F32
#undef DNNB_WGMMA_F8
#undef DNNB_WGMMA_D32
#undef DNNB_WGMMA_D64
#undef DNNB_WGMMA_D128

// d (64 x 256 per warpgroup, f32) += A (64 x 16, K-major, descriptor da) times B (16 x 256,
// descriptor db: K-major when kTransB == 0, N-major when 1).
template <typename T, int kTransB>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db) {
  wgmma_ss<T, 256, kTransB>(d, da, db, 1u);
}

}  // namespace dnnb::cuda_kernels
