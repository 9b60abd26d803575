// embedding_bwd on OpenCL: dW[v] = sum of dy[t] over the tokens with ids[t] = v, deterministic
// (embedding_bwd.cl: a stable bucketing of the tokens by id with integer atomics only, then one
// work-item per (row, column) summing the row's tokens in increasing position, f32 accumulation,
// one rounding). ids are i64 or i32. A bad id is never added through: its lowest position and
// the id are read back without waiting, and a check deferred to the device's next synchronize()
// (core/deferred_checks.h) reports bad input, as the OpenCL embedding does.
// The ranking is O(T^2 / 2) id comparisons (from local memory; 1.3e8 at T = 16384), the rest
// O(T + V D + T D).
#include <climits>
#include <memory>
#include <string>

#include "kernels/opencl/embedding_ids.h"
#include "kernels/opencl/embedding_bwd_cl.h"
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/program_dump.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::opencl {
namespace {

constexpr size_t kTile = 256;  // EBWD_TILE and EBWD_SCAN of embedding_bwd.cl

Status run_embedding_bwd(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  auto d = ops::embedding_bwd_operands(call, "opencl embedding_bwd");
  if (!d) return d.status();
  const int64_t tokens = d->tokens, vocab = d->vocab, dim = d->dim;
  const Tensor& ids = call.inputs[0];
  const Tensor& dy = call.inputs[1];
  const Tensor& dw = call.outputs[0];
  if (tokens >= INT_MAX || vocab >= INT_MAX)
    return Status::unsupported("opencl embedding_bwd: its int positions need T and V below 2^31 - 1");
  const std::string source = program_source({opencl_source::embedding_bwd});
  const std::string options = build_options(**device, dw.dtype);
  auto kernel = [&](const char* name) { return opencl_kernel(**device, "embedding_bwd", source, name, options); };
  auto count = kernel("ebwd_count");
  if (!count) return count.status();
  auto scan = kernel("ebwd_scan");
  if (!scan) return scan.status();
  auto place = kernel("ebwd_place");
  if (!place) return place.status();
  auto rows = kernel("ebwd_rows");
  if (!rows) return rows.status();
  auto bad_id = kernel("ebwd_bad_id");
  if (!bad_id) return bad_id.status();

  // One scratch buffer: the bad-id flag (int position, int pad, long id), count/start (V + 1
  // ints), rank and order (T ints each), as sub-buffers at 4096-byte offsets (a multiple of every
  // device's CL_DEVICE_MEM_BASE_ADDR_ALIGN, which sub-buffer origins must respect).
  const auto round_up = [](size_t n) { return (n + 4095) / 4096 * 4096; };
  const size_t flag_at = 0, count_at = 4096, rank_at = count_at + round_up((vocab + 1) * sizeof(cl_int));
  const size_t order_at = rank_at + round_up(tokens * sizeof(cl_int)), total = order_at + round_up(tokens * sizeof(cl_int));
  auto scratch = (*device)->scratch(total);
  if (!scratch) return scratch.status();
  std::vector<cl_mem> parts;
  struct Release {
    std::vector<cl_mem>* parts;
    ~Release() {
      for (cl_mem m : *parts) clReleaseMemObject(m);
    }
  } release{&parts};
  for (const auto& [at, bytes] : {std::pair{flag_at, size_t{16}}, std::pair{count_at, rank_at - count_at},
                                  std::pair{rank_at, order_at - rank_at}, std::pair{order_at, total - order_at}}) {
    cl_buffer_region region{at, bytes};
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateSubBuffer(*scratch, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    DNNB_CL_TRY(err);
    parts.push_back(m);
  }
  cl_mem flag = parts[0], start = parts[1], rank = parts[2], order = parts[3];
  cl_command_queue queue = (*device)->queue();
  const cl_int none = INT_MAX, zero = 0;
  DNNB_CL_TRY(clEnqueueFillBuffer(queue, flag, &none, sizeof(none), 0, sizeof(none), 0, nullptr, nullptr));
  DNNB_CL_TRY(clEnqueueFillBuffer(queue, start, &zero, sizeof(zero), 0, rank_at - count_at, 0, nullptr, nullptr));

  const cl_int ids_i32 = ids.dtype == DType::i32;
  const cl_long ids_offset = ids.offset, ids_stride = ids.strides[0];
  {
    KernelArgs args(*count);
    args.add(cl_buffer(ids)).add(ids_offset).add(ids_stride).add(ids_i32).add(cl_long{tokens}).add(cl_long{vocab});
    args.add(start).add(rank).add(flag);
    DNNB_TRY(args.status());
    const size_t global = (static_cast<size_t>(tokens) + kTile - 1) / kTile * kTile;
    DNNB_TRY(enqueue(**device, *count, 1, &global, &kTile, "embedding_bwd/ebwd_count"));
  }
  {
    KernelArgs args(*scan);
    args.add(start).add(cl_long{vocab + 1});
    DNNB_TRY(args.status());
    DNNB_TRY(enqueue(**device, *scan, 1, &kTile, &kTile, "embedding_bwd/ebwd_scan"));
  }
  {
    KernelArgs args(*place);
    args.add(cl_buffer(ids)).add(ids_offset).add(ids_stride).add(ids_i32).add(cl_long{tokens}).add(start).add(rank).add(order);
    DNNB_TRY(args.status());
    DNNB_TRY(launch_flat(**device, *place, tokens, "embedding_bwd/ebwd_place", 1));
  }
  {
    KernelArgs args(*rows);
    args.add(cl_buffer(dy)).add(cl_long{dy.offset}).add(cl_long{dy.strides[0]}).add(cl_long{dy.strides[1]});
    args.add(cl_buffer(dw)).add(cl_long{dw.offset}).add(cl_long{dw.strides[0]}).add(cl_long{dw.strides[1]});
    args.add(cl_long{vocab}).add(cl_long{dim}).add(start).add(order);
    DNNB_TRY(args.status());
    DNNB_TRY(launch_elementwise_rows(**device, *rows, vocab, dim, "embedding_bwd/ebwd_rows", 1));
  }
  return report_bad_ids(call, **device, *bad_id, ids, flag, vocab, "embedding_bwd");
}

}  // namespace
DNNB_REGISTER(register_opencl("embedding_bwd", {DType::f32, DType::bf16}, run_embedding_bwd));
}  // namespace dnnb::opencl
