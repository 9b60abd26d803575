#!/usr/bin/env bash
# Instructions per element of the OpenCL activations on NVIDIA (docs/opencl.md, "16-bit math"),
# compiled here by clang's nvptx backend (OpenCL C 1.2) with NVIDIA's libdevice for the
# built-ins NVIDIA's OpenCL takes from it (exp, erf, tanh: seen in the driver's PTX), then by
# ptxas for sm_90. native_recip / native_exp2 are taken as rcp.approx.ftz / ex2.approx.ftz.
#  1. math: each op's dnnb_unary alone in a one-element kernel: PTX and SASS instructions, the
#     kernel's own load, store and addressing subtracted (SASS: the main path up to EXIT, so an
#     out-of-line slow path such as div.rn's is not counted).
#  2. bf16 chunk: unary_chunks with DNNB_ALIGNED=1, SASS from the 16-byte load to the 16-byte
#     store of a full chunk (8 elements, bf16 widening and narrowing included), divided by 8.
# Tiers: full (the f32 code, the built-in functions), level1 (-DDNNB_HALF_MATH=1, the alternative
# portable_math) and level2 (-DDNNB_HALF_MATH=2, the 16-bit default). Needs clang 14+,
# libdevice.10.bc, ptxas and cuobjdump:
#   LIBDEVICE=/usr/local/cuda/nvvm/libdevice/libdevice.10.bc PTXAS=ptxas CUOBJDUMP=cuobjdump \
#     tests/opencl/count_instructions.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cl=$here/kernels/opencl
LIBDEVICE=${LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
PTXAS=${PTXAS:-ptxas}
CUOBJDUMP=${CUOBJDUMP:-cuobjdump}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/shim.h" <<'SHIM'
float __nv_expf(float); float __nv_erff(float); float __nv_tanhf(float);
#define exp(x) __nv_expf(x)
#define erf(x) __nv_erff(x)
#define tanh(x) __nv_tanhf(x)
inline float dnnb_shim_rcp(float x) { float r; __asm__("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
inline float dnnb_shim_ex2(float x) { float r; __asm__("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
#define native_recip(x) dnnb_shim_rcp(x)
#define native_exp2(x) dnnb_shim_ex2(x)
// Without libclc, clang leaves these OpenCL built-ins as calls: the compiler's built-ins instead.
#define fabs(x) __builtin_fabsf(x)
#define fma(a, b, c) __builtin_fmaf(a, b, c)
#define fmin(a, b) __builtin_fminf(a, b)
#define copysign(a, b) __builtin_copysignf(a, b)
#define isnan(v) ((v) != (v))
#define select(a, b, c) ((c) ? (b) : (a))
#define get_global_id(d) (__nvvm_read_ptx_sreg_tid_x() + __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x())
#define get_global_size(d) (__nvvm_read_ptx_sreg_nctaid_x() * __nvvm_read_ptx_sreg_ntid_x())
SHIM
compile() {  # compile OUT SOURCES... -- OPTIONS...
  local out=$1; shift
  local srcs=()
  while [ "$1" != -- ]; do srcs+=("$1"); shift; done
  shift
  cat "${srcs[@]}" >"$work/$out.cl"
  clang -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -O3 -cl-fp32-correctly-rounded-divide-sqrt -include "$work/shim.h" \
    "-Dinline=__attribute__((always_inline)) inline" "$@" -Xclang -mlink-builtin-bitcode -Xclang "$LIBDEVICE" \
    -S -o "$work/$out.ptx" "$work/$out.cl"
  "$PTXAS" -arch=sm_90 -O3 -o "$work/$out.cubin" "$work/$out.ptx"
}
sass() { "$CUOBJDUMP" -sass "$@" | grep -E '^\s+/\*[0-9a-f]{4}\*/' | grep -v ' NOP' || true; }
# 1. math alone: the prelude's tier helpers, the op, a one-element kernel.
sed -n '/^\/\/ ---- 16-bit math tiers/,/^\/\/ ---- row addressing/p' "$cl/prelude.cl" >"$work/tier.cl"
echo 'inline float dnnb_unary(float x) { return x; }' >"$work/identity.cl"
echo 'kernel void one(const global float* x, global float* y) { uint i = __nvvm_read_ptx_sreg_tid_x(); y[i] = dnnb_unary(x[i]); }' >"$work/one.cl"
math() {  # math OP_CL OPTIONS...: prints "ptx sass"
  compile m "$work/tier.cl" "$1" "$work/one.cl" -- "${@:2}"
  local ptx s
  ptx=$(awk '/\.entry/,/^}/' "$work/m.ptx" | grep -cE '^\s+(@%p[0-9]+ )?[a-z][a-z0-9._]*\s' || true)
  s=$(sass "$work/m.cubin" | awk '{print} /EXIT/{exit}' | wc -l)
  echo "$ptx $s"
}
# 2. unary_chunks on bf16 (only that kernel of unary_body.cl: the others need vload/vstore).
sed -n '/^\/\/ Unary elementwise kernels/,/^\/\/ x and y contiguous with the same shape/p;/^\/\/ x and y contiguous: n elements in 16-byte/,$p' \
  "$cl/unary_body.cl" >"$work/chunks.cl"
chunk() {  # chunk OP_CL OPTIONS...: SASS per element of a full bf16 chunk
  compile c "$cl/prelude.cl" "$1" "$cl/row_body.cl" "$work/chunks.cl" -- -DDNNB_BF16 -DDNNB_CACHE_VECS=8 \
    -DDNNB_ROW_WG=256 -DDNNB_ROW_VECS=1 -DDNNB_ALIGNED=1 "${@:2}"
  sass -fun unary_chunks "$work/c.cubin" | awk '/LDG.E.128/{on=1} on{n++} /STG.E.128/{exit} END{printf "%.1f", n / 8}'
}
read -r base_ptx base_sass < <(math "$work/identity.cl" -DDNNB_F32)
printf '%-10s %-10s %5s %5s %11s\n' op tier ptx sass bf16-chunk
for op in relu exp sigmoid silu tanh gelu gelu_tanh; do
  read -r p s < <(math "$cl/$op.cl" -DDNNB_F32)
  printf '%-10s %-10s %5d %5d %11s\n' "$op" full $((p - base_ptx)) $((s - base_sass)) "$(chunk "$cl/$op.cl")"
  grep -q DNNB_HALF_MATH "$cl/$op.cl" || continue
  for level in 1 2; do
    tier=level$level
    for dt in F16 BF16; do
      read -r p s < <(math "$cl/$op.cl" -DDNNB_$dt -DDNNB_HALF_MATH=$level)
      c=-; [ $dt = BF16 ] && c=$(chunk "$cl/$op.cl" -DDNNB_HALF_MATH=$level)
      printf '%-10s %-10s %5d %5d %11s\n' "$op" "$tier-${dt,,}" $((p - base_ptx)) $((s - base_sass)) "$c"
    done
  done
done
