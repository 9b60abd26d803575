// Host side of tma.cuh: the compute capability test and tensor maps of 16- and 8-bit operands,
// shared by the sm_90a kernels (gemm_wgmma.cu, sdpa_wgmma.cu).
#include <map>
#include <mutex>
#include <string>

#include "kernels/cuda/sm90a/tma.cuh"

namespace dnnb::cuda_kernels {
namespace {

// The driver's cuTensorMapEncodeTiled, through the runtime (no link against libcuda).
Result<PFN_cuTensorMapEncodeTiled_v12000> tensor_map_encoder(const char* what) {
  static std::mutex mutex;
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (encode != nullptr) return encode;
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  DNNB_CUDA_TRY(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || fn == nullptr)
    return Status::error(std::string(what) + ": the driver has no cuTensorMapEncodeTiled");
  encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  return encode;
}

}  // namespace

bool is_sm90(const CudaDevice& device) {
  static std::mutex mutex;
  static std::map<int, bool> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(device.ordinal()); it != known.end()) return it->second;
  int major = 0, minor = 0;
  const bool asked =
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device.ordinal()) == cudaSuccess &&
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device.ordinal()) == cudaSuccess;
  return known[device.ordinal()] = asked && major == 9 && minor == 0;
}

Result<CUtensorMap> tensor_map_tiled(DType dtype, const void* base, int rank, const int64_t* dims,
                                     const int64_t* strides, const uint32_t* box, const char* what) {
  if (rank < 2 || rank > 5) return Status::error(std::string(what) + ": a tensor map of rank " + std::to_string(rank));
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  int64_t element_bytes = 1;
  switch (dtype) {
    case DType::bf16: type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; element_bytes = 2; break;
    case DType::f16: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; element_bytes = 2; break;
    case DType::i8: case DType::u8: case DType::f8_e4m3fn: case DType::f8_e5m2: break;
    default:
      return Status::error(std::string(what) + ": no tensor map of " + dtype_name(dtype) + " elements");
  }
  auto encode = tensor_map_encoder(what);
  if (!encode) return encode.status();
  cuuint64_t dims_u[5], strides_u[4];
  cuuint32_t box_u[5], element_strides[5];
  std::string dims_text, strides_text;
  for (int i = 0; i < rank; ++i) {
    dims_u[i] = static_cast<cuuint64_t>(dims[i]);
    box_u[i] = box[i];
    element_strides[i] = 1;
    if (i > 0) dims_text += 'x';
    dims_text += std::to_string(dims[i]);
    if (i > 0) {
      strides_u[i - 1] = static_cast<cuuint64_t>(strides[i - 1] * element_bytes);
      if (i > 1) strides_text += ',';
      strides_text += std::to_string(strides[i - 1]);
    }
  }
  CUtensorMap map;
  const CUresult r =
      (*encode)(&map, type, static_cast<cuuint32_t>(rank), const_cast<void*>(base), dims_u, strides_u, box_u,
                element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Status::error(std::string(what) + ": cuTensorMapEncodeTiled failed (CUresult " +
                         std::to_string(static_cast<int>(r)) + ") for dims " + dims_text + ", strides " + strides_text);
  return map;
}

Result<CUtensorMap> tensor_map_16bit(DType dtype, const void* base, int rank, const int64_t* dims,
                                     const int64_t* strides, const uint32_t* box, const char* what) {
  if (dtype != DType::bf16 && dtype != DType::f16)
    return Status::error(std::string(what) + ": tensor_map_16bit of " + dtype_name(dtype) + " elements");
  return tensor_map_tiled(dtype, base, rank, dims, strides, box, what);
}

}  // namespace dnnb::cuda_kernels
