// Host side of the bit-exact copies shared by the layout ops (layout_copy.cl, embedding.cl):
// one program holds every copy kernel for 4-byte and 2-byte words, so permute, concat, slice,
// repeat_kv and embedding build one program per device, whatever their dtype.
#pragma once
#include <string>

#include "kernels/opencl/opencl_launch.h"

namespace dnnb::opencl {

// Kernel `name` (copy_rows, transpose_tiles or embedding_rows) of the layout-copy program for
// the word size of `dtype` (f32: 4 bytes; f16, bf16: 2); unsupported for any other dtype.
Result<cl_kernel> layout_kernel(OpenCLDevice& device, DType dtype, const std::string& name);
// Elements moved per work-item step by the kernels of `dtype`'s word size (16 bytes).
int64_t layout_vector_width(DType dtype);

// dst = src, bit for bit: two views of one shape and dtype (any strides, stride 0 allowed in
// src). A batch of tiled transposes when dst's innermost dim is not src's unit-stride dim but
// another dim is (rank <= 4); row copies otherwise. `what` names the op in errors.
Status copy_view(OpenCLDevice& device, const Tensor& src, const Tensor& dst, const std::string& what);

// The op's (inputs, outputs) arity, or bad_input naming what it expects.
Status expect_io(const OpCall& call, size_t inputs, size_t outputs, const std::string& expected);

}  // namespace dnnb::opencl
