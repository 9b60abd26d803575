// What the Hopper (sm_90a) kernels share besides wgmma (wgmma.cuh): TMA tile loads (the
// mbarriers they complete are bulk_copy.cuh's), setmaxnreg (device side), and on the host the
// compute capability test and tensor maps of 16- and 8-bit operands (tma.cu). The device wrappers are
// PTX of the "cp.async.bulk.tensor" and "setmaxnreg" sections of the PTX ISA.
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>

#include "kernels/cuda/bulk_copy.cuh"
#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

// Box (c0, c1, c2) of a 3-D tensor map into shared memory; completes bytes on `bar`.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

// Box (c0, c1, c2, c3) of a 4-D tensor map into shared memory; completes bytes on `bar`.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

// Warpgroup-wide register budget changes (all 128 threads of the warpgroup execute them).
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// ---------------------------------------------------------------------------------------------
// Host side (tma.cu).

// Compute capability 9.0 exactly: the sm_90a code runs nowhere else. Asked once per device.
bool is_sm90(const CudaDevice& device);

// A tiled tensor map of a 16-bit operand (f16 or bf16) in the 128-byte swizzle, zeros outside:
// `rank` dims (2 to 5), dims[0] the contiguous one; strides in elements of dims 1 .. rank - 1
// (each a positive multiple of 8: 16 bytes); boxes of box[0] x ... elements (box[0] * 2 <= 128).
// `what` names the caller in the error message.
Result<CUtensorMap> tensor_map_16bit(DType dtype, const void* base, int rank, const int64_t* dims,
                                     const int64_t* strides, const uint32_t* box, const char* what);
// The same for any operand TMA copies here: 16-bit (f16, bf16) or 8-bit (i8, u8, f8_e4m3fn,
// f8_e5m2, copied as bytes; strides then multiples of 16 elements, box[0] <= 128).
Result<CUtensorMap> tensor_map_tiled(DType dtype, const void* base, int rank, const int64_t* dims,
                                     const int64_t* strides, const uint32_t* box, const char* what);

}  // namespace dnnb::cuda_kernels
