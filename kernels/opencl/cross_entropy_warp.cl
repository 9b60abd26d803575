// cross_entropy's per-row losses with one warp per row, the bf16 default on NVIDIA's OpenCL (host:
// cross_entropy_warp.cpp). Placed after the prelude, row_body.cl and logsumexp_body.cl (for
// dnnb_raw_load, dnnb_row_exp, dnnb_vfmax, dnnb_lse_exp), built with the one-reduction fast-exp
// raw options (DNNB_ROW_ONE, DNNB_ROW_RAW, DNNB_HALF_MATH=2) plus:
//   -DDNNB_WARPS=k         warps (32 work-items) per work-group; DNNB_ROW_WG must be 32 k
//   -DDNNB_ROW_VECS=U      16-byte vectors per lane in one chunk (a warp chunk: 32 U vectors)
//   -DDNNB_WARP_EXACT=0|1  1 when the host proved every row is whole chunks, 16-byte aligned
//   -DDNNB_WARP_EMULATE=1  test builds only (below)
// Why: the work-group kernels (cross_entropy.cl) merge each row's statistics through local memory
// with barriers, a fixed cost per row that a bf16 row (16 KB at 8192 columns) does not amortise.
// Here a row never leaves its warp: each lane streams its vectors of the row with a running (max,
// sum of exps) (logsumexp_body.cl "online", with one accumulator per vector position: 8 short add
// chains instead of one long one), and the warp merges its lanes' pairs in five shfl.sync.bfly
// steps: no local memory, no barrier.
// The walk: warp w of the grid takes rows w, w + W, w + 2W, ... (W = warps in the grid, as many
// as the GPU holds at once); while it folds one chunk, the loads of its next chunk (of the same
// row, or the first of its next row) are already issued (two buffers used in turn, as the CUDA
// kernel cross_entropy_pipe.cuh), so a warp never waits on a row start. Each warp adds its rows'
// losses in row order and writes one (loss sum, kept rows) pair; ce_finish (cross_entropy.cl) adds
// the pairs in order: deterministic for a device (the grid depends only on its compute units).
#if !defined(DNNB_WARPS) || !defined(DNNB_WARP_EXACT)
#error "cross_entropy_warp.cl needs -DDNNB_WARPS and -DDNNB_WARP_EXACT"
#endif
#if DNNB_ROW_WG != 32 * DNNB_WARPS
#error "DNNB_ROW_WG must be 32 * DNNB_WARPS"
#endif
#if !defined(DNNB_BF16) || !DNNB_ROW_ONE || !DNNB_ROW_RAW
#error "the warp plan is bf16 with the one-reduction raw options"
#endif
#ifndef DNNB_WARP_EMULATE
#define DNNB_WARP_EMULATE 0
#endif
#if !DNNB_NV_PTX && !DNNB_WARP_EMULATE
#error "the warp plan needs NVIDIA inline PTX (shfl.sync), or the test emulation"
#endif
#define DNNB_WARP_CHUNK_COLS (32 * DNNB_ROW_VECS * DNNB_VW)

// ---- the lane exchange: lane l gets lane l ^ mask's value ------------------------------------
// NVIDIA: shfl.sync.bfly with every lane named (membermask 0xffffffff; clamp 31: one 32-lane
// segment). Every lane of a warp reaches each call: the kernel's control flow is uniform across
// the work-group (see the walk below). volatile: the compiler must not move or merge the shuffle.
// Emulation (-DDNNB_WARP_EMULATE=1, never on NVIDIA: the host sets it only where the PTX tier is
// absent and the test switch is on): the same exchange through local memory with two barriers,
// so PoCL runs every other line of this file. A barrier needs the whole work-group, hence the
// uniform control flow; the PTX form needs only the warp's.
#if DNNB_WARP_EMULATE
#define DNNB_XCH_PARAM , local float *xch
#define DNNB_XCH_ARG , xch
inline float dnnb_warp_xor(float v, int mask, local float* xch) {
  const int lid = get_local_id(0);
  xch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  const float other = xch[lid ^ mask];
  barrier(CLK_LOCAL_MEM_FENCE);  // xch is written again by the next exchange
  return other;
}
#else
#define DNNB_XCH_PARAM
#define DNNB_XCH_ARG
inline float dnnb_warp_xor(float v, int mask) {
  uint other;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, 0xffffffff;" : "=r"(other) : "r"(as_uint(v)), "r"(mask));
  return as_float(other);
}
#endif

// The warp's (max, sum) from its lanes' pairs (m_i, s_i), every lane: five butterfly steps, each
// the merge of logsumexp_body.cl (M = max, S = s_a e^(m_a - M) + s_b e^(m_b - M), a pair whose
// max is -inf weighted by e^-inf = 0, so its NaN survives as 0 x NaN). m is never NaN (fmax), so
// both lanes of a step compute the same expression in either order. Error: each term meets at
// most five merge factors on top of the online ones (docs/opencl.md, "Cross-entropy").
inline float dnnb_warp_lse(float m, float s, float* m_out DNNB_XCH_PARAM) {
#pragma unroll
  for (int mask = 16; mask > 0; mask >>= 1) {
    const float m2 = dnnb_warp_xor(m, mask DNNB_XCH_ARG);
    const float s2 = dnnb_warp_xor(s, mask DNNB_XCH_ARG);
    const float mm = fmax(m, m2);
    const float shift = dnnb_lse_shift(mm);
    s = s * dnnb_lse_exp(m - shift) + s2 * dnnb_lse_exp(m2 - shift);
    m = mm;
  }
  *m_out = m;
  return s;
}

// ---- one warp chunk ---------------------------------------------------------------------------
// Vector u of chunk c of the lane: columns ((c U + u) 32 + lane) 8 .. + 7, so each load
// instruction of the warp reads 512 contiguous bytes. Columns past the row read -inf (never
// touched in memory: dnnb_raw_load's scalar tail); EXACT rows have no bounds test at all.
inline void dnnb_warp_load(private dnnb_raw_t* buf, const global dnnb_t* row, int c, int lane, int cols) {
  const int c0 = (c * DNNB_ROW_VECS * 32 + lane) * DNNB_VW;
#pragma unroll
  for (int u = 0; u < DNNB_ROW_VECS; ++u) {
    const int col = c0 + u * 32 * DNNB_VW;
#if DNNB_WARP_EXACT
    buf[u] = dnnb_vload_bits(row + col);
#else
    buf[u] = col < cols ? dnnb_raw_load(row, col, cols, -INFINITY) : dnnb_raw_splat(-INFINITY);
#endif
  }
}

// The largest value of a chunk, NaN-ignoring as fmax (NaN only for a chunk of NaNs). NVIDIA: on
// the stored bits, max.bf16x2 (sm_80+; like fmax, it returns the other operand for one NaN): half
// an instruction per value and no widening, so the widened chunk is not kept from this pass to
// the exp pass (with fmax on the widened values, clang + ptxas for sm_90 kept them: 186 registers
// for U = 8 against 128). Elsewhere (the test emulation) fmax on the widened values.
#if DNNB_NV_PTX
inline uint dnnb_bf16x2_max(uint a, uint b) {
  uint r;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
inline float dnnb_warp_chunk_max(const private uint4* buf) {
  uint4 v = buf[0];
#pragma unroll
  for (int u = 1; u < DNNB_ROW_VECS; ++u)
    v = (uint4)(dnnb_bf16x2_max(v.x, buf[u].x), dnnb_bf16x2_max(v.y, buf[u].y), dnnb_bf16x2_max(v.z, buf[u].z),
                dnnb_bf16x2_max(v.w, buf[u].w));
  const uint w = dnnb_bf16x2_max(dnnb_bf16x2_max(v.x, v.y), dnnb_bf16x2_max(v.z, v.w));
  return fmax(dnnb_bf16_to_f32((ushort)w), dnnb_bf16_to_f32((ushort)(w >> 16)));
}
#else
inline float dnnb_warp_chunk_max(const private dnnb_raw_t* buf) {
  dnnb_vec vmax = dnnb_raw_get(buf[0]);
#pragma unroll
  for (int u = 1; u < DNNB_ROW_VECS; ++u) vmax = fmax(vmax, dnnb_raw_get(buf[u]));
  return dnnb_vfmax(vmax);
}
#endif

// Folds a chunk into the lane's running pair: m its max (fmax: NaN-ignoring; a NaN shows in the
// sum instead, as e^(NaN - shift)), acc the sums of e^(x - shift) 2^bias per vector position,
// rescaled once per chunk when the max grows (e^(-inf - shift) = 0 for the first finite max; a
// NaN already in acc stays: 0 x NaN).
inline void dnnb_warp_fold(const private dnnb_raw_t* buf, float* m, dnnb_vec* acc) {
  const float m_new = fmax(*m, dnnb_warp_chunk_max(buf));
  const float shift = dnnb_lse_shift(m_new);
  dnnb_vec a = *acc * dnnb_lse_exp(*m - shift);
#pragma unroll
  for (int u = 0; u < DNNB_ROW_VECS; ++u) a += dnnb_row_exp(dnnb_raw_get(buf[u]) - shift);
  *acc = a;
  *m = m_new;
}

// ---- the walk -----------------------------------------------------------------------------------
// Iteration i of warp w of group g takes row first + w + i W (first = g k, W = all warps). Every
// warp of a group runs the same n iterations (n: those of the group's warp 0, whose row is always
// inside), so the loop, the chunk steps and the exchanges are uniform across the work-group; a
// warp whose row lies past the end ("dead", at most its last iteration) walks warp 0's row of that
// iteration instead (its loads hit the same lines) and records nothing.
// (The row view itself, dnnb_rows, stays a separate argument: copied into this struct, its arrays
// went to a stack frame, clang + ptxas for sm_90.)
typedef struct {
  const global dnnb_t* logits;
  long rows;
  const global long* target;  // the first row's target
  long t_stride, ignore_index;
  long first;  // the group's first row
  long warps;  // W
  int n;       // iterations of every warp of the group
  int warp, lane, cols, chunks;
} dnnb_warp_walk;

// The row this warp folds and what it needs of it.
typedef struct {
  const global dnnb_t* x;
  long t;
  int live;
} dnnb_warp_row;

// dnnb_row_start (prelude.cl) with its loop over the outer dims unrolled: constant indices keep the
// view in registers (the prelude's variable index put it in a 104-byte stack frame, clang + ptxas
// for sm_90), and a 2-D view (one outer dim) costs a multiply instead of a 64-bit % and /.
inline long dnnb_warp_row_start(dnnb_rows lr, long r) {
  if (lr.outer_dims == 1) return lr.offset + r * lr.stride[0];
  long off = lr.offset;
#pragma unroll
  for (int d = 3; d >= 0; --d)
    if (d < lr.outer_dims) {
      off += (r % lr.size[d]) * lr.stride[d];
      r /= lr.size[d];
    }
  return off;
}

inline dnnb_warp_row dnnb_warp_row_of(const dnnb_warp_walk* w, dnnb_rows lr, int i) {
  const long mine = w->first + w->warp + i * w->warps;
  dnnb_warp_row row;
  row.live = mine < w->rows;
  const long r = row.live ? mine : w->first + i * w->warps;
  row.x = w->logits + dnnb_warp_row_start(lr, r);
  row.t = w->target[r * w->t_stride];  // one address: one load for the warp
  return row;
}

// The warp's position: chunk c of iteration i is in the buffer being folded.
typedef struct {
  int i;
  int c;
  dnnb_warp_row row, next;  // the row of iteration i; of i + 1 once its first loads are issued
  dnnb_bits_t xt_bits;      // the target's logit of `row`, loaded at its first chunk
  float m;
  dnnb_vec acc;
  float loss_sum, kept;  // of the warp's finished rows
} dnnb_warp_pos;

// One step: issues the loads of the chunk after (i, c) into nxt (the row's next chunk, or the
// first chunk of the warp's next row, whose target comes with it), then folds cur, which holds
// chunk (i, c); at the row's last chunk adds its loss. Moves on; returns whether a chunk follows.
inline int dnnb_warp_step(const dnnb_warp_walk* w, dnnb_rows lr, dnnb_warp_pos* p, const private dnnb_raw_t* cur,
                          private dnnb_raw_t* nxt DNNB_XCH_PARAM) {
  int ni = p->i;
  int nc = p->c + 1;
  if (nc == w->chunks) {
    ++ni;
    nc = 0;
  }
  const int more = ni < w->n;
  if (more) {
    if (nc == 0) p->next = dnnb_warp_row_of(w, lr, ni);
    dnnb_warp_load(nxt, nc == 0 ? p->next.x : p->row.x, nc, w->lane, w->cols);
  }
  // The target was loaded a step ago with the row's first chunk; its logit is needed only at the
  // row's end. Out of range: column 0 is loaded and the loss is NaN below.
  const int target_ok = p->row.t >= 0 && p->row.t < w->cols;
  if (p->c == 0) p->xt_bits = dnnb_load_bits(p->row.x, target_ok ? (int)p->row.t : 0);
  dnnb_warp_fold(cur, &p->m, &p->acc);
  if (nc == 0) {  // row i is complete
    float m;
    const float s = dnnb_warp_lse(p->m, dnnb_vsum(p->acc), &m DNNB_XCH_ARG);
    if (p->row.live && p->row.t != w->ignore_index) {
      const float xt = target_ok ? dnnb_bits_get(p->xt_bits) : NAN;
      // s carries dnnb_row_exp's 2^DNNB_EXP16_BIAS: unscaled exactly before the log (as ce_rows_cached).
      p->loss_sum += log(s * DNNB_EXP16_UNBIAS) + (m - xt);
      p->kept += 1.0f;
    }
    p->row = p->next;
    p->m = -INFINITY;
    p->acc = (dnnb_vec)(0.0f);
  }
  p->i = ni;
  p->c = nc;
  return more;
}

// partial[2 v], partial[2 v + 1] = (loss sum, kept rows) of grid warp v (ce_finish adds them).
kernel __attribute__((reqd_work_group_size(DNNB_ROW_WG, 1, 1))) void ce_rows_warp(
    const global dnnb_t* logits, dnnb_rows lr, const global long* target, long t_offset, long t_stride,
    long ignore_index, global float* partial) {
#if DNNB_WARP_EMULATE
  local float xch[DNNB_ROW_WG];
#endif
  dnnb_warp_walk w;
  w.logits = logits;
  w.rows = lr.rows;
  w.target = target + t_offset;
  w.t_stride = t_stride;
  w.ignore_index = ignore_index;
  w.first = (long)get_group_id(0) * DNNB_WARPS;
  w.warps = (long)get_num_groups(0) * DNNB_WARPS;
  w.n = w.first < lr.rows ? (int)((lr.rows - w.first + w.warps - 1) / w.warps) : 0;
  w.warp = (int)get_local_id(0) / 32;
  w.lane = (int)get_local_id(0) % 32;
  w.cols = (int)lr.cols;
  w.chunks = (w.cols + DNNB_WARP_CHUNK_COLS - 1) / DNNB_WARP_CHUNK_COLS;
  dnnb_warp_pos p;
  p.i = 0;
  p.c = 0;
  p.m = -INFINITY;
  p.acc = (dnnb_vec)(0.0f);
  p.loss_sum = 0.0f;
  p.kept = 0.0f;
  if (w.n > 0) {  // uniform across the group
    dnnb_raw_t buf0[DNNB_ROW_VECS], buf1[DNNB_ROW_VECS];
    p.row = dnnb_warp_row_of(&w, lr, 0);
    p.next = p.row;
    dnnb_warp_load(buf0, p.row.x, 0, w.lane, w.cols);
    // Two steps per iteration with the buffers' roles swapped: no copies between chunks.
    while (dnnb_warp_step(&w, lr, &p, buf0, buf1 DNNB_XCH_ARG) &&
           dnnb_warp_step(&w, lr, &p, buf1, buf0 DNNB_XCH_ARG)) {
    }
  }
  if (w.lane == 0) {
    const long v = w.first + w.warp;
    partial[2 * v] = p.loss_sum;
    partial[2 * v + 1] = p.kept;
  }
}
