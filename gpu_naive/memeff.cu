/*
 * gpu_naive/memeff.cu: memory-efficient attention forward and backward (bias, its gradient, dropout), the naive
 * GPU rung.
 *
 * What changed since cpu/: the loops became grids, one thread per output element, reading everything straight
 * from global memory and recomputing every score, probability and dropout bit it needs. The forward is two
 * kernels: one thread per row finds lse (the max m and the sum l of exp(S - m) over the row's keys), then one
 * thread per o[b,h,i,e] sums P~ V. The backward is four: one thread per dq, per dk, per dv and per dbias element.
 * A dbias thread owns one element of the bias's shape and sums dS over every (b, h, i, j) that the broadcast
 * maps onto it, in a fixed order: no atomics, so dbias repeats bitwise like everything else here (deterministic
 * mode changes nothing, and neither do splits: a thread already walks all of its row's keys). The dropout bit of each element is Philox evaluated where it is needed
 * (common/philox.h), so the forward and every backward kernel see the same mask without storing it.
 *
 * Preconditions: validated by ladder_memeff_fwd/bwd (f32, device pointers, any input strides, the bias
 * broadcastable with any strides, contiguous outputs, Hq and B at most 65535).
 * Run it:  build/bin/ladder run memeff --rung gpu_naive
 */
#include "attention.h"
#include "cuda_check.cuh"
#include "memeff_rungs.h"
#include "philox.h"

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
    view4 q, k, v, dout, bias; /* bias.p NULL: none; its strides 0 where it broadcasts (memeff_bias_of) */
    float drop_p, drop_scale;  /* dropout probability and 1/(1 - p), as floats */
    uint64_t seed, offset;     /* the Philox key and the output element (0,0,0,0) draws */
    const float *o, *lse;      /* written by the forward, read by the backward: contiguous */
    float *o_out, *lse_out, *dq, *dk, *dv, *dbias;
    int64_t dbias_shape[4]; /* the bias's shape (dbias is contiguous in it) */
};

/* The sequence of packed query row r (or key row, with @p keys). */
__device__ ladder_attn_seq seq_of(const naive_args &a, int64_t r, bool keys) {
    const int64_t s = a.cu_q ? ladder_attn_seq_index(keys ? a.cu_k : a.cu_q, a.n_seqs, r) : 0;
    return ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
}

/* S of packed query row r of head h and packed key c: softcap(scale * q.k) + bias; *Sc the softcapped part. */
__device__ float score(const naive_args &a, int64_t b, int64_t h, int64_t r, int64_t c, float *Sc) {
    const int64_t hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    float acc = 0.0f;
    for (int64_t e = 0; e < a.D; e++) acc += a.q(b, h, r, e) * a.k(b, hk, c, e);
    *Sc = ladder_attn_softcap(a.scale * acc, a.softcap);
    return a.bias.p ? *Sc + a.bias(b, h, r, c) : *Sc;
}

/* What dropout multiplies P of element (b, h, r, c) by: 1/(1-p) kept, 0 dropped, 1 without dropout. */
__device__ float keep_scale(const naive_args &a, int64_t b, int64_t h, int64_t r, int64_t c) {
    if (a.drop_p == 0.0f) return 1.0f;
    const uint64_t n = ladder_dropout_counter(a.offset, b, h, r, c, a.Hq, a.Sq, a.Sk);
    return ladder_dropout_keep(a.seed, n, a.drop_p) ? a.drop_scale : 0.0f;
}

/* Delta = dO . O - dlse for packed row r of head h (the preprocess, recomputed where needed). */
__device__ float delta_of(const naive_args &a, int64_t b, int64_t h, int64_t r) {
    const int64_t row = (b * a.Hq + h) * a.Sq + r;
    const float dl = a.dlse ? a.dlse[b * a.sdlse[0] + h * a.sdlse[1] + r * a.sdlse[2]] : 0.0f;
    float acc = 0.0f;
    for (int64_t e = 0; e < a.Dv; e++) acc += a.dout(b, h, r, e) * a.o[row * a.Dv + e];
    return acc - dl;
}

/* Element (b, h, r, c) of the backward: P, dS = P (dP - Delta) with dP = dO . V times the dropout scale, and dS'
 * (dS times the softcap's slope: what dQ and dK take; dbias takes dS, the bias being added after the softcap). */
struct grads {
    float P, dS, dSc;
};

__device__ grads element(const naive_args &a, int64_t b, int64_t h, int64_t r, int64_t c) {
    const int64_t row = (b * a.Hq + h) * a.Sq + r, hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    float Sc;
    const float S = score(a, b, h, r, c, &Sc);
    grads g;
    g.P = expf(S - ladder_attn_lse_for_bwd(a.lse[row]));
    float dP = 0.0f;
    for (int64_t f = 0; f < a.Dv; f++) dP += a.dout(b, h, r, f) * a.v(b, hk, c, f);
    g.dS = g.P * (dP * keep_scale(a, b, h, r, c) - delta_of(a, b, h, r));
    g.dSc = g.dS * ladder_attn_softcap_grad(Sc, a.softcap);
    return g;
}

/* Does packed query row r see packed key c? (Only keys of its own sequence, inside the mask.) */
__device__ bool sees(const naive_args &a, int64_t r, int64_t c) {
    const ladder_attn_seq seq = seq_of(a, r, false);
    return c >= seq.k0 && c < seq.k0 + seq.Lk && ladder_attn_allowed(&a.mask, r - seq.q0, c - seq.k0, seq.Lq, seq.Lk);
}

/* One thread per row [b,h,i]: lse = m + log(l), m the row's largest S, l = sum_j exp(S_ij - m). */
__global__ void memeff_lse_naive_kernel(naive_args a) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hq * a.Sq) return;
    const int64_t r = t % a.Sq, h = (t / a.Sq) % a.Hq, b = t / (a.Sq * a.Hq);
    const ladder_attn_seq seq = seq_of(a, r, false);
    int64_t lo, hi;
    ladder_attn_key_range(&a.mask, r - seq.q0, seq.Lq, seq.Lk, &lo, &hi);
    float m = -INFINITY, l = 0.0f, Sc;
    for (int64_t j = lo; j < hi; j++) {
        const float S = score(a, b, h, r, seq.k0 + j, &Sc);
        if (S > m || S != S) m = S; /* not fmaxf: a NaN score must stay visible */
    }
    for (int64_t j = lo; j < hi && m != -INFINITY; j++) l += expf(score(a, b, h, r, seq.k0 + j, &Sc) - m);
    a.lse_out[t] = ladder_attn_lse(m, l);
}

/* One thread per o[b,h,i,e] = sum_j P_ij keep_ij/(1-p) V[j,e], P = exp(S - lse); a fully masked row: 0. */
__global__ void memeff_o_naive_kernel(naive_args a) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hq * a.Sq * a.Dv) return;
    const int64_t e = t % a.Dv, row = t / a.Dv, r = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
    const ladder_attn_seq seq = seq_of(a, r, false);
    const int64_t hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    int64_t lo, hi;
    ladder_attn_key_range(&a.mask, r - seq.q0, seq.Lq, seq.Lk, &lo, &hi);
    const float L = ladder_attn_lse_for_bwd(a.lse_out[row]);
    float acc = 0.0f, Sc;
    for (int64_t j = lo; j < hi; j++) {
        const int64_t c = seq.k0 + j;
        acc += expf(score(a, b, h, r, c, &Sc) - L) * keep_scale(a, b, h, r, c) * a.v(b, hk, c, e);
    }
    a.o_out[t] = acc;
}

/* One thread per dq[b,h,i,e] = scale * sum_j dS'_ij K[j,e]. */
__global__ void memeff_dq_naive_kernel(naive_args a) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hq * a.Sq * a.D) return;
    const int64_t e = t % a.D, row = t / a.D, r = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
    const ladder_attn_seq seq = seq_of(a, r, false);
    const int64_t hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    int64_t lo, hi;
    ladder_attn_key_range(&a.mask, r - seq.q0, seq.Lq, seq.Lk, &lo, &hi);
    float acc = 0.0f;
    for (int64_t j = lo; j < hi; j++) acc += element(a, b, h, r, seq.k0 + j).dSc * a.k(b, hk, seq.k0 + j, e);
    a.dq[t] = a.scale * acc;
}

/*
 * One thread per dk[b,hk,j,e] (with @p want_dv: dv[b,hk,j,e]), summing over every query row i of every query
 * head h of the group that sees key j: dK[j,e] += scale * dS'_ij Q[i,e], dV[j,e] += P_ij keep_ij/(1-p) dO[i,e].
 */
__global__ void memeff_dkdv_naive_kernel(naive_args a, bool want_dv) {
    const int64_t width = want_dv ? a.Dv : a.D;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hkv * a.Sk * width) return;
    const int64_t e = t % width, krow = t / width, c = krow % a.Sk, hk = (krow / a.Sk) % a.Hkv,
                  b = krow / (a.Sk * a.Hkv);
    const ladder_attn_seq seq = seq_of(a, c, true);
    const int64_t group = a.Hq / a.Hkv, j = c - seq.k0;
    float acc = 0.0f, Sc;
    for (int64_t h = hk * group; h < (hk + 1) * group; h++)
        for (int64_t i = 0; i < seq.Lq; i++) {
            if (!ladder_attn_allowed(&a.mask, i, j, seq.Lq, seq.Lk)) continue;
            const int64_t r = seq.q0 + i, row = (b * a.Hq + h) * a.Sq + r;
            if (want_dv) {
                const float P = expf(score(a, b, h, r, c, &Sc) - ladder_attn_lse_for_bwd(a.lse[row]));
                acc += P * keep_scale(a, b, h, r, c) * a.dout(b, h, r, e);
            } else {
                acc += element(a, b, h, r, c).dSc * a.q(b, h, r, e);
            }
        }
    if (want_dv) a.dv[t] = acc;
    else a.dk[t] = a.scale * acc;
}

/*
 * One thread per dbias element (C order over the bias's shape): dS summed over every (b, h, i, j) the broadcast
 * maps onto it (every index of a dimension where the bias has 1, the element's own index elsewhere), in a fixed
 * order. No scale: S = softcap(scale * q.k) + bias, so dS/dbias = 1.
 */
__global__ void memeff_dbias_naive_kernel(naive_args a) {
    const int64_t *n = a.dbias_shape;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n[0] * n[1] * n[2] * n[3]) return;
    const int64_t full[4] = {a.B, a.Hq, a.Sq, a.Sk};
    int64_t lo[4], hi[4], rest = t;
    for (int d = 3; d >= 0; d--) {
        const int64_t x = rest % n[d];
        rest /= n[d];
        lo[d] = n[d] == 1 ? 0 : x;
        hi[d] = n[d] == 1 ? full[d] : x + 1;
    }
    float acc = 0.0f;
    for (int64_t b = lo[0]; b < hi[0]; b++)
        for (int64_t h = lo[1]; h < hi[1]; h++)
            for (int64_t r = lo[2]; r < hi[2]; r++)
                for (int64_t c = lo[3]; c < hi[3]; c++)
                    if (sees(a, r, c)) acc += element(a, b, h, r, c).dS;
    a.dbias[t] = acc;
}

view4 view_of(const ladder_tensor &t) {
    view4 v = {(const float *)t.data, {t.strides[0], t.strides[1], t.strides[2], t.strides[3]}};
    return v;
}

naive_args pack(const ladder_memeff_problem *mp, const ladder_memeff_args *a) {
    naive_args n = {};
    static_cast<ladder_attn_call &>(n) = ladder_attn_call_of(&mp->attn, &a->cu_seqlens_q, &a->cu_seqlens_k, &a->dlse);
    n.q = view_of(a->q), n.k = view_of(a->k), n.v = view_of(a->v);
    if (a->dout.data) n.dout = view_of(a->dout);
    const memeff_bias bias = memeff_bias_of(a);
    n.bias = {(const float *)bias.data, {bias.s[0], bias.s[1], bias.s[2], bias.s[3]}};
    n.drop_p = (float)mp->dropout_p, n.drop_scale = ladder_dropout_scale(n.drop_p);
    n.seed = mp->philox_seed, n.offset = mp->philox_offset;
    n.o = (const float *)a->o.data, n.lse = (const float *)a->lse.data;
    n.o_out = (float *)a->o.data, n.lse_out = (float *)a->lse.data;
    n.dq = (float *)a->dq.data, n.dk = (float *)a->dk.data, n.dv = (float *)a->dv.data;
    n.dbias = (float *)a->dbias.data;
    for (int d = 0; d < 4 && a->dbias.data; d++) n.dbias_shape[d] = a->dbias.shape[d];
    return n;
}

constexpr int THREADS = 256;

} // namespace

extern "C" ladder_status memeff_fwd_gpu_naive(const ladder_memeff_problem *mp, const ladder_memeff_args *a) {
    const ladder_attention_problem *p = &mp->attn;
    naive_args n = pack(mp, a);
    const int64_t rows = p->B * p->Hq * p->Sq;
    memeff_lse_naive_kernel<<<ladder_blocks(rows, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("memeff_lse_naive_kernel");
    memeff_o_naive_kernel<<<ladder_blocks(rows * p->Dv, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("memeff_o_naive_kernel");
    return LADDER_OK;
}

extern "C" ladder_status memeff_bwd_gpu_naive(const ladder_memeff_problem *mp, const ladder_memeff_args *a) {
    const ladder_attention_problem *p = &mp->attn;
    naive_args n = pack(mp, a);
    memeff_dq_naive_kernel<<<ladder_blocks(p->B * p->Hq * p->Sq * p->D, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("memeff_dq_naive_kernel");
    const int64_t keys = p->B * p->Hkv * p->Sk;
    memeff_dkdv_naive_kernel<<<ladder_blocks(keys * p->D, THREADS), THREADS>>>(n, false);
    LADDER_LAUNCH_CHECK("memeff_dkdv_naive_kernel (dk)");
    memeff_dkdv_naive_kernel<<<ladder_blocks(keys * p->Dv, THREADS), THREADS>>>(n, true);
    LADDER_LAUNCH_CHECK("memeff_dkdv_naive_kernel (dv)");
    if (a->dbias.data) {
        memeff_dbias_naive_kernel<<<ladder_blocks(ladder_tensor_numel(&a->dbias), THREADS), THREADS>>>(n);
        LADDER_LAUNCH_CHECK("memeff_dbias_naive_kernel");
    }
    return LADDER_OK;
}
