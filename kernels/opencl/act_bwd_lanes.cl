// dnnb_binary on a whole chunk (binary_body.cl's binary_tile), lane by lane: placed after
// row_body.cl, which defines the chunk type dnnb_vec (DNNB_VW lanes).
inline dnnb_vec dnnb_binary_lanes(dnnb_vec a, dnnb_vec b) {
#if DNNB_VW == 4
  return (float4)(dnnb_binary(a.s0, b.s0), dnnb_binary(a.s1, b.s1), dnnb_binary(a.s2, b.s2), dnnb_binary(a.s3, b.s3));
#else
  return (float8)(dnnb_binary(a.s0, b.s0), dnnb_binary(a.s1, b.s1), dnnb_binary(a.s2, b.s2), dnnb_binary(a.s3, b.s3),
                  dnnb_binary(a.s4, b.s4), dnnb_binary(a.s5, b.s5), dnnb_binary(a.s6, b.s6), dnnb_binary(a.s7, b.s7));
#endif
}
