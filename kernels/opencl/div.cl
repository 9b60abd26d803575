// div: a / b. The host builds every program with -cl-fp32-correctly-rounded-divide-sqrt where
// the device supports it, so the quotient is correctly rounded (OpenCL allows 2.5 ulp otherwise).
inline float dnnb_binary(float a, float b) { return a / b; }
#if !DNNB_DIV_RECIP
// The same on whole chunks (binary_2d, binary_tile): lane-wise.
#define DNNB_BINARY_V(a, b) ((a) / (b))
#else
// -DDNNB_DIV_RECIP=1 (variant "rows4r", f16/bf16 only): chunks take a * (1/b), 1/b from
// dnnb_recip16 (prelude.cl: native_recip and one Newton step), where the correctly rounded f32
// division is ~10 instructions and a slow-path test on NVIDIA.
// Error: after the Newton step 1/b is within ~2^-22 relative on any device whose native_recip is
// good to 2^-11 (NVIDIA's rcp.approx: ~2^-23 before it), and the multiply adds 2^-24: the f32
// quotient is within ~2^-21.4 of a / b, i.e. <= 0.0004 ulp of f16 (an ulp is >= 2^-11 relative)
// and <= 0.00005 ulp of bf16 (>= 2^-8). The result is rounded to f16/bf16 next, so it is the
// correctly rounded quotient except within that distance of a tie, where it may be 1 ulp off:
// inside div's tolerance (class elementwise, core/registry.h and core/compare.cpp: 1 eps of the
// dtype for f16/bf16, eps |expected| >= 1 ulp; docs/conformance.md). Overflow and underflow
// match: an f32 product past FLT_MAX means the exact quotient rounds to inf in f16/bf16 too.
// Guards, per chunk: the fast form is exact only for 2^-126 <= |b| <= 2^126. b = 0 or inf would
// make the Newton step's fma(-b, r, 1) NaN; b NaN fails the test too; a subnormal b overflows
// 1/b or is flushed by rcp.approx.ftz; |b| > 2^126 makes 1/b subnormal, flushed to 0 the same
// way. Such a chunk (one lane is enough) takes the IEEE division. Scalar lanes throughout: one
// compare pair per lane, one branch per chunk, no vector built-ins.
#if defined(DNNB_F32)
#error "DNNB_DIV_RECIP is for f16/bf16 outputs only: f32 keeps the correctly rounded division"
#endif
inline int dnnb_div_recip_ok(float b) {
  const float m = fabs(b);
  return (m >= 0x1p-126f) & (m <= 0x1p126f);
}
inline float8 dnnb_div_recip8(float8 a, float8 b) {
  const int ok = dnnb_div_recip_ok(b.s0) & dnnb_div_recip_ok(b.s1) & dnnb_div_recip_ok(b.s2) &
                 dnnb_div_recip_ok(b.s3) & dnnb_div_recip_ok(b.s4) & dnnb_div_recip_ok(b.s5) &
                 dnnb_div_recip_ok(b.s6) & dnnb_div_recip_ok(b.s7);
  if (!ok) return a / b;
  return a * (float8)(dnnb_recip16(b.s0), dnnb_recip16(b.s1), dnnb_recip16(b.s2), dnnb_recip16(b.s3),
                      dnnb_recip16(b.s4), dnnb_recip16(b.s5), dnnb_recip16(b.s6), dnnb_recip16(b.s7));
}
#define DNNB_BINARY_V(a, b) dnnb_div_recip8((a), (b))
#endif
