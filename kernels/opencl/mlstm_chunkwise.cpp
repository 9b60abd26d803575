// mlstm_chunkwise on OpenCL: the gate pre-pass mlstm_gates (mlstm_body.cl, with the max state's
// initial 0 as a floor) into device scratch, then mlstm_chunkwise_fwd (mlstm_chunkwise.cl: one
// work-group per batch x head and tile of v's columns, walking the sequence chunk by chunk with
// the states in local memory) writing h in the problem dtype and c_last, n_last, m_last in f32.
// Every operand is read through its strides.
#include <vector>

#include "kernels/opencl/mlstm_chunkwise_cl.h"
#include "kernels/opencl/mlstm_launch.h"

namespace dnnb::opencl {
namespace {

// A work-group's shape: MLSTM_VT columns of v, chunks of MLSTM_LC rows, MLSTM_WG items.
struct ChunkTiles {
  int64_t vt, lc, wg;
};

// Local bytes of mlstm_chunkwise_fwd: the state C (DQK x vt) and n, the q and k chunks (rows of
// DQK / 4 + 1 float4), the v chunk's columns, the weights P, four floats per row.
size_t chunk_local_bytes(const ops::MlstmDesc& d, const ChunkTiles& t) {
  const int64_t d4 = (d.dqk + 3) / 4 * 4;
  return static_cast<size_t>(4 * (d4 * t.vt + d4) + 16 * 2 * t.lc * (d4 / 4 + 1) + 4 * t.lc * t.vt +
                             4 * t.lc * t.lc + 16 * t.lc);
}

// The first tiles of the device's list whose local bytes fit (every wg a multiple of its vt).
// GPUs: 256 items over 32 columns and 16 rows (each item 2 rows of h and 16 rows of C at DQK
// 128), narrower for larger DQK. CPU devices (PoCL runs a work-group as loops over its items): 64
// items.
Result<ChunkTiles> chunk_tiles(const OpenCLDevice& device, const ops::MlstmDesc& d) {
  auto cpu = mlstm_cpu_tiles(device);
  if (!cpu) return cpu.status();
  static const std::vector<ChunkTiles> kGpu = {{32, 16, 256}, {16, 16, 256}, {16, 8, 128}, {8, 8, 64}, {4, 4, 64}};
  static const std::vector<ChunkTiles> kCpu = {{32, 32, 64}, {16, 16, 64}, {8, 8, 64}, {4, 4, 16}};
  const std::vector<ChunkTiles>& list = *cpu ? kCpu : kGpu;
  const size_t cap = mlstm_local_cap(device, *cpu);
  for (const ChunkTiles& t : list)
    if (chunk_local_bytes(d, t) <= cap) return t;
  return Status::unsupported("opencl mlstm_chunkwise: DQK=" + std::to_string(d.dqk) + " needs " +
                             std::to_string(chunk_local_bytes(d, list.back())) +
                             " bytes of local memory at the smallest tiles, over the " + std::to_string(cap) +
                             " the kernel takes");
}

Status run_mlstm_chunkwise(OpCall& call) {
  auto run = mlstm_run(call);
  if (!run) return run.status();
  OpenCLDevice& device = *run->device;
  const ops::MlstmDesc& d = run->d;
  const DType dtype = run->dtype;
  DNNB_TRY(check_mlstm_call(call, mlstm_sequence_inputs(d, dtype),
                            {{"h", ops::mlstm_v_shape(d), dtype},
                             {"c_last", ops::mlstm_c_state_shape(d), DType::f32},
                             {"n_last", ops::mlstm_n_state_shape(d), DType::f32},
                             {"m_last", ops::mlstm_m_state_shape(d), DType::f32}}));
  auto tiles = chunk_tiles(device, d);
  if (!tiles) return tiles.status();
  static const std::string source = mlstm_source(opencl_source::mlstm_chunkwise);
  const std::string options =
      mlstm_options(device, dtype, d, 1,
                    "-DSDPA_BQ=1 -DSDPA_BK=1 -DMLSTM_WG=" + std::to_string(tiles->wg) +
                        " -DMLSTM_LC=" + std::to_string(tiles->lc) + " -DMLSTM_VT=" + std::to_string(tiles->vt));
  auto kernel = opencl_kernel(device, "mlstm_chunkwise", source, "mlstm_chunkwise_fwd", options);
  if (!kernel) return kernel.status();
  auto gates = run_mlstm_gates(device, call, d, "mlstm_chunkwise", source, options, mlstm_gates_bytes(d), true);
  if (!gates) return gates.status();

  // q, k, v (i and f only through the gates), the gates, h, c_last, n_last, m_last.
  DNNB_TRY(set_mlstm_forward_args(*kernel, call, 3, *gates, d));
  return launch_mlstm_groups(device, *kernel, d.batch * d.heads * sdpa_ceil_div(d.dv, tiles->vt),
                             static_cast<size_t>(tiles->wg), "mlstm_chunkwise/mlstm_chunkwise_fwd");
}

bool register_mlstm_chunkwise() {
  return register_opencl("mlstm_chunkwise", float_dtypes(), run_mlstm_chunkwise);
}

}  // namespace
DNNB_REGISTER(register_mlstm_chunkwise());
}  // namespace dnnb::opencl
