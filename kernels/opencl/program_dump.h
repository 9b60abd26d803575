// Opt-in build diagnostics for kernel engineers: with DNNB_OPENCL_DUMP=DIR set, every OpenCL
// program the kernels build is written to DIR (build options, build log, program binary: PTX
// text on NVIDIA) and NVIDIA builds get -cl-nv-verbose, so ptxas reports registers and spills
// in the log. Every kernel of kernels/opencl/ is fetched through opencl_kernel(), which is
// where the dump happens; writing errors are reported on stderr and never fail the op.
#pragma once
#include <string>

#include "devices/opencl/opencl_device.h"

namespace dnnb::opencl {

// True when the device's platform vendor is NVIDIA's.
bool is_nvidia(const OpenCLDevice& device);
// DIR of DNNB_OPENCL_DUMP, or "" when the dump is off (read once per process).
const std::string& dump_dir();
// " -cl-nv-verbose" when the dump is on and the device's platform is NVIDIA's, else "".
std::string dump_build_options(const OpenCLDevice& device);
// device.kernel(...), and on the first build of (device, program, options) the dump.
Result<cl_kernel> opencl_kernel(OpenCLDevice& device, const std::string& program_name, const std::string& source,
                                const std::string& kernel_name, const std::string& options);

}  // namespace dnnb::opencl
