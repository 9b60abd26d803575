# Turns one OpenCL C source into a C++ header holding it as a raw string literal, so the
# binary carries its kernels and needs no file at run time.
#   cmake -DSOURCE=x.cl -DHEADER=x_cl.h -DSYMBOL=x -P embed_cl.cmake
file(READ "${SOURCE}" text)
string(FIND "${text}" ")dnnb_cl\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${SOURCE} contains the raw-string delimiter )dnnb_cl\"")
endif()
file(WRITE "${HEADER}.tmp"
  "// Generated from ${SOURCE} by kernels/opencl/embed_cl.cmake; do not edit.\n"
  "#pragma once\n"
  "namespace dnnb::opencl_source {\n"
  "inline constexpr const char ${SYMBOL}[] = R\"dnnb_cl(${text})dnnb_cl\";\n"
  "}  // namespace dnnb::opencl_source\n")
file(COPY_FILE "${HEADER}.tmp" "${HEADER}" ONLY_IF_DIFFERENT)
file(REMOVE "${HEADER}.tmp")
