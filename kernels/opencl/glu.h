// Host side of the gating ops on OpenCL (glu_body.cl): swiglu, geglu and their backward share
// one program per gate (glu_math.cl, the gate's .cl, glu_body.cl); each op's .cpp registers
// itself through register_glu.
#pragma once
#include <string>

namespace dnnb::opencl {

// Registers the default of `op`: forward (a, b -> y) or backward (a, b, dy -> da, db), in
// program `program_name` built from program_source({glu_math.cl, gate_source, glu_body.cl}).
// Contiguous operands of one shape take glu_flat / glu_bwd_flat, any other view the *_rows
// kernel.
bool register_glu(const std::string& op, const std::string& program_name, const char* gate_source, bool backward);

}  // namespace dnnb::opencl
