// Registration of an op: its spec, and the `reference` backend that runs the spec's float64
// oracle on the host and rounds the result into the output dtype. Op files call
//   DNNB_REGISTER(register_op(make_relu_spec()));
#pragma once
#include "core/registry.h"

namespace dnnb {

// Adds `spec` to Registry::instance() and registers Implementation {op, "reference", "",
// spec.dtypes}. A spec without fill_inputs gets fill_normal_inputs (reference/fill.h).
// False when the op or its reference was already registered (the registry says why).
bool register_op(OpSpec spec);

// The reference implementation of one spec, as registered by register_op: supports() is ok
// on any host-memory cpu device; run() computes spec.reference into fresh contiguous f64
// host tensors, then stores each element into the call's outputs through their strides
// (outputs may be views into larger, guarded buffers: nothing outside the view is written).
Implementation reference_implementation(const OpSpec& spec);

// Stores every element of the contiguous f64 tensor `values` into the view `dst` (same
// shape, any dtype and strides, host memory), rounding as store_element does.
Status store_f64_into(const Tensor& values, Tensor& dst);

}  // namespace dnnb
