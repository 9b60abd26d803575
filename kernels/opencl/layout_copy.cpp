// The layout-copy program and copy_view (layout_copy.h).
#include "kernels/opencl/layout_copy.h"

#include <algorithm>
#include <string>

#include "kernels/opencl/embedding_cl.h"
#include "kernels/opencl/layout_copy_cl.h"

namespace dnnb::opencl {
namespace {

// dnnb_transpose in layout_copy.cl, field for field.
struct ClTranspose {
  cl_long n_i, n_j, n_b1, batches;
  cl_long x_offset, x_i, x_j, x_b0, x_b1;
  cl_long y_offset, y_i, y_j, y_b0, y_b1;
};
static_assert(sizeof(ClTranspose) == 14 * sizeof(cl_long), "ClTranspose must match dnnb_transpose");

constexpr size_t kTile = 32;                   // DNNB_TT
constexpr size_t kMaxGroups = size_t{1} << 20;  // transpose_tiles walks the rest in a loop

// The copy bodies once per word size, each under its own macros (layout_copy.cl's header
// says what they mean); the kernels end in _32 or _16.
const std::string& layout_copy_source() {
  static const std::string source = [] {
    const std::string words32 =
        "#define DNNB_CT uint\n#define DNNB_CW 4\n#define DNNB_CVLOAD(p) vload4(0, (p))\n"
        "#define DNNB_CVSTORE(v, p) vstore4((v), 0, (p))\n#define DNNB_CK(n) n##_32\n";
    const std::string words16 =
        "#define DNNB_CT ushort\n#define DNNB_CW 8\n#define DNNB_CVLOAD(p) vload8(0, (p))\n"
        "#define DNNB_CVSTORE(v, p) vstore8((v), 0, (p))\n#define DNNB_CK(n) n##_16\n";
    const std::string undef =
        "\n#undef DNNB_CT\n#undef DNNB_CW\n#undef DNNB_CVLOAD\n#undef DNNB_CVSTORE\n#undef DNNB_CK\n";
    const std::string body = std::string(opencl_source::layout_copy) + "\n" + opencl_source::embedding;
    return program_source({}) + "\n" + words32 + body + undef + words16 + body + undef;
  }();
  return source;
}

Status launch_transpose(OpenCLDevice& device, const Tensor& src, const Tensor& dst, int p, const std::string& what) {
  const int last = src.ndim() - 1;
  ClTranspose t{};
  t.n_i = src.shape[p];
  t.n_j = src.shape[last];
  t.x_offset = src.offset;
  t.x_i = src.strides[p];
  t.x_j = src.strides[last];
  t.y_offset = dst.offset;
  t.y_i = dst.strides[p];
  t.y_j = dst.strides[last];
  // The other dims (at most two) are the batch, b0 outer and b1 inner; a missing one (-1) has
  // size 1.
  int batch_dims[2] = {-1, -1};
  for (int d = 0; d < last; ++d) {
    if (d == p) continue;
    batch_dims[0] = batch_dims[1];
    batch_dims[1] = d;
  }
  auto size = [&](int d) -> cl_long { return d < 0 ? 1 : src.shape[d]; };
  auto stride = [](const Tensor& v, int d) -> cl_long { return d < 0 ? 0 : v.strides[d]; };
  t.n_b1 = size(batch_dims[1]);
  t.batches = size(batch_dims[0]) * size(batch_dims[1]);
  t.x_b0 = stride(src, batch_dims[0]);
  t.x_b1 = stride(src, batch_dims[1]);
  t.y_b0 = stride(dst, batch_dims[0]);
  t.y_b1 = stride(dst, batch_dims[1]);
  auto kernel = layout_kernel(device, src.dtype, "transpose_tiles");
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(src)).add(cl_buffer(dst)).add(t);
  DNNB_TRY(args.status());
  const size_t tiles_i = static_cast<size_t>((t.n_i + kTile - 1) / kTile);
  const size_t tiles_j = static_cast<size_t>((t.n_j + kTile - 1) / kTile);
  const size_t tiles = tiles_i * tiles_j * static_cast<size_t>(t.batches);
  const size_t groups = std::min(tiles, kMaxGroups);
  const size_t global[2] = {groups * kTile, 8};
  const size_t local[2] = {kTile, 8};
  return enqueue(device, *kernel, 2, global, local, what + "/transpose_tiles");
}

}  // namespace

int64_t layout_vector_width(DType dtype) { return dtype_size(dtype) == 4 ? 4 : 8; }

Result<cl_kernel> layout_kernel(OpenCLDevice& device, DType dtype, const std::string& name) {
  const size_t bytes = dtype_size(dtype);
  if (bytes != 4 && bytes != 2)
    return Status::unsupported(std::string("opencl layout copies move 4- or 2-byte words, not ") + dtype_name(dtype));
  // The copies use no float type: the prelude's f32 build serves every word size.
  return opencl_kernel(device, "layout_copy", layout_copy_source(), name + (bytes == 4 ? "_32" : "_16"),
                       build_options(device, DType::f32));
}

Status copy_view(OpenCLDevice& device, const Tensor& src, const Tensor& dst, const std::string& what) {
  if (src.shape != dst.shape || src.dtype != dst.dtype)
    return Status::bad_input(what + ": copy from " + src.describe() + " to " + dst.describe() +
                             " needs one shape and dtype");
  if (dst.numel() == 0) return Status::ok();
  const int rank = src.ndim();
  const int last = rank - 1;
  // Innermost dim moved: dst is unit-stride along it, src along another dim p.
  if (rank >= 2 && rank <= 4 && dst.strides[last] == 1 && src.strides[last] != 1 && src.shape[last] > 1) {
    for (int p = 0; p < last; ++p)
      if (src.strides[p] == 1 && src.shape[p] > 1) return launch_transpose(device, src, dst, p, what);
  }
  auto xr = cl_rows(src);
  if (!xr) return xr.status();
  auto yr = cl_rows(dst);
  if (!yr) return yr.status();
  auto kernel = layout_kernel(device, src.dtype, "copy_rows");
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(src)).add(*xr).add(cl_buffer(dst)).add(*yr);
  DNNB_TRY(args.status());
  return launch_elementwise_rows(device, *kernel, yr->rows, yr->cols, what + "/copy_rows",
                                 layout_vector_width(src.dtype));
}

Status expect_io(const OpCall& call, size_t inputs, size_t outputs, const std::string& expected) {
  if (call.inputs.size() == inputs && call.outputs.size() == outputs) return Status::ok();
  return Status::bad_input(call.problem.op + ": expects " + expected);
}

}  // namespace dnnb::opencl
