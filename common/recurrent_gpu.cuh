/**
 * @file recurrent_gpu.cuh
 * @brief What the recurrent GPU rungs share: the call as one struct of device pointers and strides, a
 *        sequence's tokens, the folded log gate of a row, and the end of the backward: the per-row and
 *        per-column gate sums (kept in double between kernels) turned into dgk, dgv, dg and dg_gamma.
 *
 * The gate gradients follow the cpu rung's three passes (cpu/recurrent.c): a rung writes, for every token t,
 * G_t[i] (the gradient of the row-i gate summed over the columns) into `G_row` and, with gv, G_t[j] into
 * `G_col`; rec_finish_gates() then writes dgk and dgv from them, dg_t = sum_i G_t[i], and dg_gamma[h] as the
 * sum of dg over every token, in a fixed order (bitwise-repeatable). The tensor-core rung writes dgk and dgv
 * from its own sums and leaves only dg_t's partial sums to rec_finish_dg(). Its kernels are in
 * recurrent_gpu.cu.
 */
#ifndef LADDER_RECURRENT_GPU_CUH
#define LADDER_RECURRENT_GPU_CUH

#include <stdint.h>

#include "cuda_check.cuh"
#include "cuda_util.cuh"
#include "recurrent.h"

/** A strided f32 input as a kernel reads it: element [a,b,c,d] (missing dimensions have stride 0). */
struct rec_view {
    const float *p; /* nullptr when the tensor is absent: it reads as 0 */
    int64_t s[4];
};

/** Element [a,b,c,d] of @p x, or 0 when x is absent. */
__device__ __forceinline__ float rec_ld(const rec_view &x, int64_t a, int64_t b, int64_t c, int64_t d) {
    return x.p ? x.p[a * x.s[0] + b * x.s[1] + c * x.s[2] + d * x.s[3]] : 0.0f;
}

/** One recurrent call, as every kernel of the GPU rungs takes it. Outputs are contiguous (nullptr: absent). */
struct rec_call {
    rec_view q, k, v, g, g_gamma, gk, gv, h0, dht, dO;
    float *o, *ht, *dq, *dk, *dv, *dg, *dg_gamma, *dgk, *dgv, *dh0;
    const int32_t *cu_seqlens; /* nullptr: every batch row is one sequence */
    int64_t B, T, H, K, V, N;  /* N sequences */
    float scale;
    bool reverse;
};

/** A sequence: its batch row, its first token and its length. */
struct rec_seq {
    int64_t b, start, len;
};

__device__ __forceinline__ rec_seq rec_seq_of(const rec_call &c, int64_t n) {
    if (c.cu_seqlens) return {0, c.cu_seqlens[n], (int64_t)c.cu_seqlens[n + 1] - c.cu_seqlens[n]};
    return {n, 0, c.T};
}

/** The token of step @p step (0..len-1, in the order the recurrence runs). */
__device__ __forceinline__ int64_t rec_token(const rec_call &c, const rec_seq &s, int64_t step) {
    return c.reverse ? s.start + s.len - 1 - step : s.start + step;
}

/** The log decay of row i at token t without gv: gk + g + g_gamma, added in the cpu rung's order. */
__device__ __forceinline__ float rec_row_gate(const rec_call &c, int64_t b, int64_t t, int64_t h, int64_t i) {
    return rec_ld(c.gk, b, t, h, i) + rec_ld(c.g, b, t, h, 0) + rec_ld(c.g_gamma, h, 0, 0, 0);
}

/** Flat index of token (b, t, h) in a [B,T,H] tensor (times K or V for the wider ones). */
__device__ __forceinline__ int64_t rec_row(const rec_call &c, int64_t b, int64_t t, int64_t h) {
    return (b * c.T + t) * c.H + h;
}

/** The call's tensors as device views (host side). */
inline rec_view rec_view_of(const ladder_tensor &t) {
    rec_view x = {(const float *)t.data, {0, 0, 0, 0}};
    for (int d = 0; t.data && d < t.rank; d++) x.s[d] = t.strides[d];
    return x;
}

inline rec_call rec_call_of(const ladder_recurrent_problem *p, const ladder_recurrent_args *a) {
    rec_call c = {};
    c.q = rec_view_of(a->q), c.k = rec_view_of(a->k), c.v = rec_view_of(a->v);
    c.g = rec_view_of(a->g), c.g_gamma = rec_view_of(a->g_gamma);
    c.gk = rec_view_of(a->gk), c.gv = rec_view_of(a->gv), c.h0 = rec_view_of(a->h0);
    c.dht = rec_view_of(a->dht), c.dO = rec_view_of(a->do_);
    c.o = (float *)a->o.data, c.ht = (float *)a->ht.data, c.dq = (float *)a->dq.data, c.dk = (float *)a->dk.data;
    c.dv = (float *)a->dv.data, c.dg = (float *)a->dg.data, c.dg_gamma = (float *)a->dg_gamma.data;
    c.dgk = (float *)a->dgk.data, c.dgv = (float *)a->dgv.data, c.dh0 = (float *)a->dh0.data;
    c.cu_seqlens = (const int32_t *)a->cu_seqlens.data;
    c.B = p->B, c.T = p->T, c.H = p->H, c.K = p->K, c.V = p->V;
    c.N = a->cu_seqlens.data ? a->cu_seqlens.shape[0] - 1 : p->B;
    c.scale = (float)ladder_recurrent_scale(p);
    c.reverse = p->reverse;
    return c;
}

/** Whether the backward has any gate gradient to write. */
inline bool rec_has_gates(const rec_call &c) { return c.g.p || c.g_gamma.p || c.gk.p || c.gv.p; }

/**
 * The backward's scratch, in one allocation: G_row and Z_row [B,T,H,K], with gv G_col and Z_col [B,T,H,V],
 * and G_tok [B,T,H] (doubles). Z_* hold each step's dht-part term until the forward sums add them up.
 */
struct rec_gate_scratch {
    double *G_row = nullptr, *Z_row = nullptr, *G_col = nullptr, *Z_col = nullptr, *G_tok = nullptr;
    ladder_scratch mem;
    ladder_status alloc(const rec_call &c) {
        if (!rec_has_gates(c)) return LADDER_OK;
        const int64_t tokens = c.B * c.T * c.H, cols = c.gv.p ? tokens * c.V : 0;
        LADDER_TRY(mem.alloc((size_t)(2 * tokens * c.K + 2 * cols + tokens) * sizeof(double)));
        G_row = (double *)mem.ptr, Z_row = G_row + tokens * c.K;
        G_col = c.gv.p ? Z_row + tokens * c.K : nullptr, Z_col = c.gv.p ? G_col + cols : nullptr;
        G_tok = Z_row + tokens * c.K + 2 * cols;
        return LADDER_OK;
    }
};

/** Write dgk, dgv, dg and dg_gamma from the scratch the rung filled (nothing when no gate was given). */
ladder_status rec_finish_gates(const rec_call &c, const rec_gate_scratch &s);

/**
 * Write dg and dg_gamma (those asked for) for a rung that wrote dgk and dgv itself and left dg_t's sum over the
 * rows in @p parts partial sums over blocks of rows, @p G_part [parts][B*T*H] (device, doubles): dg_t adds them
 * in block order; @p G_tok [B*T*H] (device scratch) keeps dg_t in double for dg_gamma.
 */
ladder_status rec_finish_dg(const rec_call &c, const double *G_part, int parts, double *G_tok);

#endif
