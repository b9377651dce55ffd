/*
 * gpu_naive/flash.cu: FlashAttention-2 forward and backward, the naive GPU rung.
 *
 * What changed since cpu/: the loops became grids, one thread per output element, reading everything straight
 * from global memory and recomputing every score it needs. The forward is two kernels: one thread per row finds
 * lse (the running max m and sum l over the row's keys), then one thread per o[b,h,i,e] sums exp(S - lse) V.
 * The backward is three: one thread per dq, per dk and per dv element, each recomputing P = exp(S - lse),
 * dP = dO . V and Delta = dO . O as it goes. Nothing is shared, nothing is stored between kernels but lse, so
 * the work grows with D (and Dv) times what the tiled rung does; and no two threads write one element, so the
 * results repeat bitwise (deterministic mode changes nothing here).
 *
 * Preconditions: validated by ladder_flash_fwd/bwd (f32, device pointers, any input strides, contiguous
 * outputs, Hq and B at most 65535).
 * Run it:  build/bin/ladder run flash --rung gpu_naive
 */
#include "attention.h"
#include "cuda_check.cuh"
#include "flash_rungs.h"

namespace {

/* A strided rank-4 input: element [b, h, s, e]. */
struct view4 {
    const float *p;
    int64_t s[4];
    __device__ float operator()(int64_t b, int64_t h, int64_t r, int64_t e) const {
        return p[b * s[0] + h * s[1] + r * s[2] + e * s[3]];
    }
};

/* What every kernel needs: inputs, outputs, sizes and options. */
struct naive_args : ladder_attn_call {
    view4 q, k, v, dout;
    const float *o, *lse; /* written by the forward, read by the backward: contiguous */
    float *o_out, *lse_out, *dq, *dk, *dv;
};

/* The sequence of packed query row r (or key row, with @p keys) of batch row b. */
__device__ ladder_attn_seq seq_of(const naive_args &a, int64_t r, bool keys) {
    const int64_t s = a.cu_q ? ladder_attn_seq_index(keys ? a.cu_k : a.cu_q, a.n_seqs, r) : 0;
    return ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
}

/* S for packed query row r of head h and packed key row c of head hk: scale * q.k, softcapped. */
__device__ float score(const naive_args &a, int64_t b, int64_t h, int64_t r, int64_t hk, int64_t c) {
    float acc = 0.0f;
    for (int64_t e = 0; e < a.D; e++) acc += a.q(b, h, r, e) * a.k(b, hk, c, e);
    return ladder_attn_softcap(a.scale * acc, a.softcap);
}

/* Delta = dO . O - dlse for packed row r of head h (the preprocess, recomputed where needed). */
__device__ float delta_of(const naive_args &a, int64_t b, int64_t h, int64_t r) {
    const int64_t row = (b * a.Hq + h) * a.Sq + r;
    const float dl = a.dlse ? a.dlse[b * a.sdlse[0] + h * a.sdlse[1] + r * a.sdlse[2]] : 0.0f;
    float acc = 0.0f;
    for (int64_t e = 0; e < a.Dv; e++) acc += a.dout(b, h, r, e) * a.o[row * a.Dv + e];
    return acc - dl;
}

/* One thread per row [b,h,i]: lse = m + log(l), m the row's largest S, l = sum_j exp(S_ij - m). */
__global__ void flash_lse_naive_kernel(naive_args a) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hq * a.Sq) return;
    const int64_t r = t % a.Sq, h = (t / a.Sq) % a.Hq, b = t / (a.Sq * a.Hq);
    const ladder_attn_seq seq = seq_of(a, r, false);
    const int64_t hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    int64_t lo, hi;
    ladder_attn_key_range(&a.mask, r - seq.q0, seq.Lq, seq.Lk, &lo, &hi);
    float m = -INFINITY, l = 0.0f;
    for (int64_t j = lo; j < hi; j++) m = fmaxf(m, score(a, b, h, r, hk, seq.k0 + j));
    for (int64_t j = lo; j < hi; j++) l += expf(score(a, b, h, r, hk, seq.k0 + j) - m);
    a.lse_out[t] = ladder_attn_lse(m, l);
}

/* One thread per o[b,h,i,e] = sum_j exp(S_ij - lse_i) V[j,e]; a fully masked row sums nothing: 0. */
__global__ void flash_o_naive_kernel(naive_args a) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hq * a.Sq * a.Dv) return;
    const int64_t e = t % a.Dv, row = t / a.Dv, r = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
    const ladder_attn_seq seq = seq_of(a, r, false);
    const int64_t hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    int64_t lo, hi;
    ladder_attn_key_range(&a.mask, r - seq.q0, seq.Lq, seq.Lk, &lo, &hi);
    const float L = a.lse_out[row];
    float acc = 0.0f;
    for (int64_t j = lo; j < hi; j++) acc += expf(score(a, b, h, r, hk, seq.k0 + j) - L) * a.v(b, hk, seq.k0 + j, e);
    a.o_out[t] = acc;
}

/* One thread per dq[b,h,i,e] = scale * sum_j dS'_ij K[j,e], dS' = P (dP - Delta) times the softcap's slope. */
__global__ void flash_dq_naive_kernel(naive_args a) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hq * a.Sq * a.D) return;
    const int64_t e = t % a.D, row = t / a.D, r = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
    const ladder_attn_seq seq = seq_of(a, r, false);
    const int64_t hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    int64_t lo, hi;
    ladder_attn_key_range(&a.mask, r - seq.q0, seq.Lq, seq.Lk, &lo, &hi);
    const float L = ladder_attn_lse_for_bwd(a.lse[row]), Delta = lo < hi ? delta_of(a, b, h, r) : 0.0f;
    float acc = 0.0f;
    for (int64_t j = lo; j < hi; j++) {
        const int64_t c = seq.k0 + j;
        const float S = score(a, b, h, r, hk, c), P = expf(S - L);
        float dP = 0.0f;
        for (int64_t f = 0; f < a.Dv; f++) dP += a.dout(b, h, r, f) * a.v(b, hk, c, f);
        acc += P * (dP - Delta) * ladder_attn_softcap_grad(S, a.softcap) * a.k(b, hk, c, e);
    }
    a.dq[t] = a.scale * acc;
}

/*
 * One thread per dk[b,hk,j,e] (with @p want_dv: dv[b,hk,j,e]), summing over every query row i of every query
 * head h of the group that sees key j: dK[j,e] += scale * dS'_ij Q[i,e], dV[j,e] += P_ij dO[i,e].
 */
__global__ void flash_dkdv_naive_kernel(naive_args a, bool want_dv) {
    const int64_t width = want_dv ? a.Dv : a.D;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hkv * a.Sk * width) return;
    const int64_t e = t % width, krow = t / width, c = krow % a.Sk, hk = (krow / a.Sk) % a.Hkv,
                  b = krow / (a.Sk * a.Hkv);
    const ladder_attn_seq seq = seq_of(a, c, true);
    const int64_t group = a.Hq / a.Hkv, j = c - seq.k0;
    float acc = 0.0f;
    for (int64_t h = hk * group; h < (hk + 1) * group; h++)
        for (int64_t i = 0; i < seq.Lq; i++) {
            if (!ladder_attn_allowed(&a.mask, i, j, seq.Lq, seq.Lk)) continue;
            const int64_t r = seq.q0 + i, row = (b * a.Hq + h) * a.Sq + r;
            const float S = score(a, b, h, r, hk, c), P = expf(S - ladder_attn_lse_for_bwd(a.lse[row]));
            if (want_dv) {
                acc += P * a.dout(b, h, r, e);
                continue;
            }
            float dP = 0.0f;
            for (int64_t f = 0; f < a.Dv; f++) dP += a.dout(b, h, r, f) * a.v(b, hk, c, f);
            acc += P * (dP - delta_of(a, b, h, r)) * ladder_attn_softcap_grad(S, a.softcap) * a.q(b, h, r, e);
        }
    if (want_dv) a.dv[t] = acc;
    else a.dk[t] = a.scale * acc;
}

view4 view_of(const ladder_tensor &t) {
    view4 v = {(const float *)t.data, {t.strides[0], t.strides[1], t.strides[2], t.strides[3]}};
    return v;
}

naive_args pack(const ladder_flash_problem *fp, const ladder_flash_args *a) {
    naive_args n = {};
    static_cast<ladder_attn_call &>(n) = ladder_attn_call_of(&fp->attn, &a->cu_seqlens_q, &a->cu_seqlens_k, &a->dlse);
    n.q = view_of(a->q), n.k = view_of(a->k), n.v = view_of(a->v);
    if (a->dout.data) n.dout = view_of(a->dout);
    n.o = (const float *)a->o.data, n.lse = (const float *)a->lse.data;
    n.o_out = (float *)a->o.data, n.lse_out = (float *)a->lse.data;
    n.dq = (float *)a->dq.data, n.dk = (float *)a->dk.data, n.dv = (float *)a->dv.data;
    return n;
}

constexpr int THREADS = 256;

} // namespace

extern "C" ladder_status flash_fwd_gpu_naive(const ladder_flash_problem *fp, const ladder_flash_args *a) {
    const ladder_attention_problem *p = &fp->attn;
    naive_args n = pack(fp, a);
    const int64_t rows = p->B * p->Hq * p->Sq;
    flash_lse_naive_kernel<<<ladder_blocks(rows, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("flash_lse_naive_kernel");
    flash_o_naive_kernel<<<ladder_blocks(rows * p->Dv, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("flash_o_naive_kernel");
    return LADDER_OK;
}

extern "C" ladder_status flash_bwd_gpu_naive(const ladder_flash_problem *fp, const ladder_flash_args *a) {
    const ladder_attention_problem *p = &fp->attn;
    naive_args n = pack(fp, a);
    flash_dq_naive_kernel<<<ladder_blocks(p->B * p->Hq * p->Sq * p->D, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("flash_dq_naive_kernel");
    const int64_t keys = p->B * p->Hkv * p->Sk;
    flash_dkdv_naive_kernel<<<ladder_blocks(keys * p->D, THREADS), THREADS>>>(n, false);
    LADDER_LAUNCH_CHECK("flash_dkdv_naive_kernel (dk)");
    flash_dkdv_naive_kernel<<<ladder_blocks(keys * p->Dv, THREADS), THREADS>>>(n, true);
    LADDER_LAUNCH_CHECK("flash_dkdv_naive_kernel (dv)");
    return LADDER_OK;
}
