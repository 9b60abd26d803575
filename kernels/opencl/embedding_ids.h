// The bad-id report of the OpenCL embedding and embedding_bwd. Their kernels never read through an
// id outside [0, V): they record the lowest such position in a 16-byte device flag (int position,
// int pad, long id; position INT_MAX: none). report_bad_ids then runs the op's one-item kernel
// that adds that position's id, reads the 16 bytes into host memory without waiting (the queue is
// in order) and defers the check to the device's next synchronize() (core/deferred_checks.h), so
// a launch never waits for the device.
#pragma once

#include <string>

#include "kernels/opencl/opencl_launch.h"

namespace dnnb::opencl {

// bad_id takes (ids buffer, ids offset, ids stride, ids_i32, flag). The deferred check reports bad
// input "OP: ids[P] = ID is outside the table's V rows".
Status report_bad_ids(OpCall& call, OpenCLDevice& device, cl_kernel bad_id, const Tensor& ids, cl_mem flag,
                      int64_t vocab, const std::string& op);

}  // namespace dnnb::opencl
