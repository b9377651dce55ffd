/*
 * gpu_naive/flex.cu: flex attention forward and backward (score_mod with its gradients, mask_mods through block
 * lists), and the block-mask builder of every GPU rung, the naive GPU rung.
 *
 * What changed since cpu/: the loops became grids, one thread per output element, reading everything straight from
 * global memory and recomputing every score and probability it needs. A thread walks its row's keys (or its key's
 * rows) through the block lists as cpu/flex.c does: partial tiles with the mask mods, full tiles without, empty tiles
 * never. The forward is two kernels (one thread per row for lse, one per o element); the backward four: dq, dk, dv
 * and one thread per buffer-gradient element. That thread owns its element: it walks every score of the problem in
 * a fixed order (b, h, i, then the row's keys), asks the mod which elements that score read, and adds dS * dS/dx
 * where it read this one. No atomics: the buffer gradients repeat bitwise like everything else here. It is the
 * slowest kernel of the rung by far (every thread visits every score), the price of owning the output.
 *
 * The builder (flex_build_gpu, for every GPU rung) is the host's two steps as kernels: one thread per tile for its
 * kind, then one thread per query tile for the forward's lists and one per key tile for the backward's.
 *
 * Preconditions: validated by ladder_flex_fwd/bwd, block lists present (f32, device pointers, any input strides,
 * contiguous outputs, Hq and B at most 65535). Run it:  build/bin/ladder run flex --rung gpu_naive
 */
#include "attention.h"
#include "cuda_check.cuh"
#include "flex_rungs.h"

namespace {

/* A strided rank-4 input: element [b, h, s, e]. */
struct view4 {
    const float *p;
    int64_t s[4];
    __device__ float operator()(int64_t b, int64_t h, int64_t r, int64_t e) const {
        return p[b * s[0] + h * s[1] + r * s[2] + e * s[3]];
    }
};

/* What every kernel needs: inputs, outputs, sizes, the mods' view and the block lists. */
struct naive_args : ladder_attn_call {
    view4 q, k, v, dout;
    ladder_flex_env env;
    flex_blocks blocks;
    int mod;          /* the score mod */
    unsigned masks;   /* the mask mods */
    const float *o, *lse; /* written by the forward, read by the backward: contiguous */
    float *o_out, *lse_out, *dq, *dk, *dv;
};

/* Call f(j) for every key j that row i of head h in batch row b sees: partial tiles through the mask mods, then full
 * tiles unchecked (the visiting order of cpu/flex.c). */
template <class F>
__device__ void for_each_key(const naive_args &a, int64_t b, int64_t h, int64_t i, F f) {
    const flex_blocks &k = a.blocks;
    const int64_t row = flex_list_row(&k, b, h, i / LADDER_FLEX_BLOCK, k.Tq);
    for (int full = 0; full < 2; full++) {
        const int32_t count = (full ? k.full_kv_num : k.kv_num)[row];
        const int32_t *tiles = (full ? k.full_kv_idx : k.kv_idx) + row * k.Tk;
        for (int32_t e = 0; e < count; e++) {
            const int64_t j0 = (int64_t)tiles[e] * LADDER_FLEX_BLOCK;
            for (int64_t j = j0; j < j0 + LADDER_FLEX_BLOCK && j < a.Sk; j++)
                if (full || ladder_flex_masks(a.masks, &a.env, b, h, i, j)) f(j);
        }
    }
}

/* Call f(i) for every row i of head h in batch row b that sees key j, through the key tile's (transposed) lists. */
template <class F>
__device__ void for_each_row(const naive_args &a, int64_t b, int64_t h, int64_t j, F f) {
    const flex_blocks &k = a.blocks;
    const int64_t col = flex_list_row(&k, b, h, j / LADDER_FLEX_BLOCK, k.Tk);
    for (int full = 0; full < 2; full++) {
        const int32_t count = (full ? k.full_q_num : k.q_num)[col];
        const int32_t *tiles = (full ? k.full_q_idx : k.q_idx) + col * k.Tq;
        for (int32_t e = 0; e < count; e++) {
            const int64_t i0 = (int64_t)tiles[e] * LADDER_FLEX_BLOCK;
            for (int64_t i = i0; i < i0 + LADDER_FLEX_BLOCK && i < a.Sq; i++)
                if (full || ladder_flex_masks(a.masks, &a.env, b, h, i, j)) f(i);
        }
    }
}

/* s = scale * q_i . k_j of element (b, h, i, j). */
__device__ float raw_score(const naive_args &a, int64_t b, int64_t h, int64_t i, int64_t j) {
    const int64_t hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    float acc = 0.0f;
    for (int64_t e = 0; e < a.D; e++) acc += a.q(b, h, i, e) * a.k(b, hk, j, e);
    return a.scale * acc;
}

/* Delta = dO . O - dlse for row i of head h (the preprocess, recomputed where needed). */
__device__ float delta_of(const naive_args &a, int64_t b, int64_t h, int64_t i) {
    const int64_t row = (b * a.Hq + h) * a.Sq + i;
    const float dl = a.dlse ? a.dlse[b * a.sdlse[0] + h * a.sdlse[1] + i * a.sdlse[2]] : 0.0f;
    float acc = 0.0f;
    for (int64_t e = 0; e < a.Dv; e++) acc += a.dout(b, h, i, e) * a.o[row * a.Dv + e];
    return acc - dl;
}

/* Element (b, h, i, j) of the backward: P, dS = P (dP - Delta), ds = dS * dS/ds; the mod's derivatives in g. */
struct grads {
    float P, dS, ds;
    ladder_flex_grad g;
};

__device__ grads element(const naive_args &a, int64_t b, int64_t h, int64_t i, int64_t j) {
    const int64_t row = (b * a.Hq + h) * a.Sq + i, hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    const float s = raw_score(a, b, h, i, j);
    grads e;
    e.P = expf(ladder_flex_score(a.mod, s, &a.env, b, h, i, j) - ladder_attn_lse_for_bwd(a.lse[row]));
    float dP = 0.0f;
    for (int64_t f = 0; f < a.Dv; f++) dP += a.dout(b, h, i, f) * a.v(b, hk, j, f);
    e.dS = e.P * (dP - delta_of(a, b, h, i));
    e.g = ladder_flex_score_grad(a.mod, s, &a.env, b, h, i, j);
    e.ds = e.dS * e.g.dscore;
    return e;
}

/* One thread per row [b,h,i]: lse = m + log(l), m the row's largest S, l = sum_j exp(S_ij - m). */
__global__ void flex_lse_naive_kernel(naive_args a) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hq * a.Sq) return;
    const int64_t i = t % a.Sq, h = (t / a.Sq) % a.Hq, b = t / (a.Sq * a.Hq);
    float m = -INFINITY, l = 0.0f;
    for_each_key(a, b, h, i, [&](int64_t j) {
        const float S = ladder_flex_score(a.mod, raw_score(a, b, h, i, j), &a.env, b, h, i, j);
        if (S > m || S != S) m = S; /* not fmaxf: a NaN score must stay visible */
    });
    if (m != -INFINITY)
        for_each_key(a, b, h, i, [&](int64_t j) {
            l += expf(ladder_flex_score(a.mod, raw_score(a, b, h, i, j), &a.env, b, h, i, j) - m);
        });
    a.lse_out[t] = ladder_attn_lse(m, l);
}

/* One thread per o[b,h,i,e] = sum_j P_ij V[j,e], P = exp(S - lse); a fully masked row: 0. */
__global__ void flex_o_naive_kernel(naive_args a) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hq * a.Sq * a.Dv) return;
    const int64_t e = t % a.Dv, row = t / a.Dv, i = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
    const int64_t hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    const float L = ladder_attn_lse_for_bwd(a.lse_out[row]);
    float acc = 0.0f;
    for_each_key(a, b, h, i, [&](int64_t j) {
        acc += expf(ladder_flex_score(a.mod, raw_score(a, b, h, i, j), &a.env, b, h, i, j) - L) * a.v(b, hk, j, e);
    });
    a.o_out[t] = acc;
}

/* One thread per dq[b,h,i,e] = scale * sum_j ds_ij K[j,e]. */
__global__ void flex_dq_naive_kernel(naive_args a) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hq * a.Sq * a.D) return;
    const int64_t e = t % a.D, row = t / a.D, i = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
    const int64_t hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    float acc = 0.0f;
    for_each_key(a, b, h, i, [&](int64_t j) { acc += element(a, b, h, i, j).ds * a.k(b, hk, j, e); });
    a.dq[t] = a.scale * acc;
}

/* One thread per dk[b,hk,j,e] (with @p want_dv: dv[b,hk,j,e]), summing over every row i of every query head h of the
 * group that sees key j: dK[j,e] += scale * ds_ij Q[i,e], dV[j,e] += P_ij dO[i,e]. */
__global__ void flex_dkdv_naive_kernel(naive_args a, bool want_dv) {
    const int64_t width = want_dv ? a.Dv : a.D;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.B * a.Hkv * a.Sk * width) return;
    const int64_t e = t % width, krow = t / width, j = krow % a.Sk, hk = (krow / a.Sk) % a.Hkv,
                  b = krow / (a.Sk * a.Hkv), group = a.Hq / a.Hkv;
    float acc = 0.0f;
    for (int64_t h = hk * group; h < (hk + 1) * group; h++)
        for_each_row(a, b, h, j, [&](int64_t i) {
            const grads g = element(a, b, h, i, j);
            acc += want_dv ? g.P * a.dout(b, h, i, e) : g.ds * a.q(b, h, i, e);
        });
    if (want_dv) a.dv[t] = acc;
    else a.dk[t] = a.scale * acc;
}

/*
 * One thread per element x of a buffer's gradient (@p reads: bit r set when read r of the score mod takes this
 * buffer): dx = sum over every score, b, h, i ascending and the row's keys in visiting order, of dS * dS/dx where a
 * read hit x. Where the score reads is asked first (cheap); dS is computed only for a score that read x.
 */
__global__ void flex_dbuf_naive_kernel(naive_args a, unsigned reads, float *grad, int64_t numel) {
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= numel) return;
    float acc = 0.0f;
    for (int64_t b = 0; b < a.B; b++)
        for (int64_t h = 0; h < a.Hq; h++)
            for (int64_t i = 0; i < a.Sq; i++)
                for_each_key(a, b, h, i, [&](int64_t j) {
                    /* where the score reads depends on its position alone (flex_mods.h), so s = 0 finds it */
                    const ladder_flex_grad where = ladder_flex_score_grad(a.mod, 0.0f, &a.env, b, h, i, j);
                    bool hit = false;
                    for (int r = 0; r < LADDER_FLEX_MAX_READS; r++) hit |= ((reads >> r) & 1u) && where.at[r] == x;
                    if (!hit) return;
                    const grads e = element(a, b, h, i, j);
                    for (int r = 0; r < LADDER_FLEX_MAX_READS; r++)
                        if (((reads >> r) & 1u) && e.g.at[r] == x) acc += e.dS * e.g.d[r];
                });
    grad[x] = acc;
}

/* ---- the block-mask builder of every GPU rung ---- */

/* One thread per tile [mb, mh, tq, tk]: its kind under the mask mods. */
__global__ void flex_tile_kind_kernel(naive_args a, unsigned char *kind, int64_t n) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const flex_blocks &k = a.blocks;
    const int64_t tk = t % k.Tk, tq = t / k.Tk % k.Tq, h = t / (k.Tk * k.Tq) % k.MH, b = t / (k.Tk * k.Tq * k.MH);
    kind[t] = (unsigned char)ladder_flex_tile_kind(a.masks, &a.env, b, h, tq, tk);
}

/* One thread per query tile (@p columns false: a row of kinds, the forward's lists) or key tile (true: a column,
 * the backward's). */
__global__ void flex_lists_kernel(const unsigned char *kind, int64_t rows, int64_t Tq, int64_t Tk, bool columns,
                                  int32_t *idx, int32_t *num, int32_t *full_idx, int32_t *full_num) {
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows * (columns ? Tk : Tq)) return;
    if (columns) {
        const unsigned char *col = kind + r / Tk * Tq * Tk + r % Tk;
        ladder_flex_list_row(col, Tk, Tq, idx + r * Tq, &num[r], full_idx + r * Tq, &full_num[r]);
    } else {
        ladder_flex_list_row(kind + r * Tk, 1, Tk, idx + r * Tk, &num[r], full_idx + r * Tk, &full_num[r]);
    }
}

view4 view_of(const ladder_tensor &t) {
    view4 v = {(const float *)t.data, {t.strides[0], t.strides[1], t.strides[2], t.strides[3]}};
    return v;
}

naive_args pack(const ladder_flex_problem *fp, const ladder_flex_args *a) {
    naive_args n = {};
    const ladder_tensor none = {};
    static_cast<ladder_attn_call &>(n) = ladder_attn_call_of(&fp->attn, &none, &none, &a->dlse);
    n.q = view_of(a->q), n.k = view_of(a->k), n.v = view_of(a->v);
    if (a->dout.data) n.dout = view_of(a->dout);
    n.env = ladder_flex_env_of(fp, a);
    n.blocks = flex_blocks_of(a);
    n.mod = fp->score_mod, n.masks = (unsigned)fp->mask_mods;
    n.o = (const float *)a->o.data, n.lse = (const float *)a->lse.data;
    n.o_out = (float *)a->o.data, n.lse_out = (float *)a->lse.data;
    n.dq = (float *)a->dq.data, n.dk = (float *)a->dk.data, n.dv = (float *)a->dv.data;
    return n;
}

constexpr int THREADS = 256;

} // namespace

extern "C" ladder_status flex_fwd_gpu_naive(const ladder_flex_problem *fp, const ladder_flex_args *a) {
    const ladder_attention_problem *p = &fp->attn;
    const naive_args n = pack(fp, a);
    const int64_t rows = p->B * p->Hq * p->Sq;
    flex_lse_naive_kernel<<<ladder_blocks(rows, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("flex_lse_naive_kernel");
    flex_o_naive_kernel<<<ladder_blocks(rows * p->Dv, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("flex_o_naive_kernel");
    return LADDER_OK;
}

extern "C" ladder_status flex_bwd_gpu_naive(const ladder_flex_problem *fp, const ladder_flex_args *a) {
    const ladder_attention_problem *p = &fp->attn;
    const naive_args n = pack(fp, a);
    flex_dq_naive_kernel<<<ladder_blocks(p->B * p->Hq * p->Sq * p->D, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("flex_dq_naive_kernel");
    const int64_t keys = p->B * p->Hkv * p->Sk;
    flex_dkdv_naive_kernel<<<ladder_blocks(keys * p->D, THREADS), THREADS>>>(n, false);
    LADDER_LAUNCH_CHECK("flex_dkdv_naive_kernel (dk)");
    flex_dkdv_naive_kernel<<<ladder_blocks(keys * p->Dv, THREADS), THREADS>>>(n, true);
    LADDER_LAUNCH_CHECK("flex_dkdv_naive_kernel (dv)");
    /* each buffer gradient asked for, with the reads of the score mod that take that buffer */
    const ladder_flex_score_spec *mod = &ladder_flex_score_mods[fp->score_mod];
    for (int r = 0; r < mod->n_reads; r++) {
        const ladder_flex_buffer_spec *buf = ladder_flex_buffer(mod->reads[r]);
        const ladder_tensor *g = (const ladder_tensor *)((const char *)a + buf->grad);
        bool earlier = false; /* a buffer read twice: its gradient was written with its first read */
        for (int q = 0; q < r; q++) earlier |= ladder_flex_buffer(mod->reads[q]) == buf;
        if (!g->data || earlier) continue;
        unsigned reads = 0;
        for (int q = r; q < mod->n_reads; q++) reads |= (ladder_flex_buffer(mod->reads[q]) == buf ? 1u : 0u) << q;
        const int64_t numel = ladder_tensor_numel(g);
        flex_dbuf_naive_kernel<<<ladder_blocks(numel, THREADS), THREADS>>>(n, reads, (float *)g->data, numel);
        LADDER_LAUNCH_CHECK("flex_dbuf_naive_kernel");
    }
    for (int i = 0; i < ladder_flex_n_buffers; i++) { /* a buffer no mod reads: S does not move with it */
        const ladder_flex_buffer_spec *s = &ladder_flex_buffers[i];
        const ladder_tensor *g = s->grad ? (const ladder_tensor *)((const char *)a + s->grad) : nullptr;
        if (g && g->data && !ladder_flex_reads(fp, s->name))
            LADDER_CUDA_TRY(cudaMemsetAsync(g->data, 0, (size_t)ladder_tensor_numel(g) * sizeof(float)));
    }
    return LADDER_OK;
}

extern "C" ladder_status flex_build_gpu(const ladder_flex_problem *fp, const ladder_flex_args *a) {
    const naive_args n = pack(fp, a);
    const flex_blocks &k = n.blocks;
    const int64_t rows = k.MB * k.MH, tiles = rows * k.Tq * k.Tk;
    unsigned char *kind = nullptr;
    LADDER_CUDA_TRY(cudaMalloc(&kind, (size_t)tiles));
    flex_tile_kind_kernel<<<ladder_blocks(tiles, THREADS), THREADS>>>(n, kind, tiles);
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess) {
        flex_lists_kernel<<<ladder_blocks(rows * k.Tq, THREADS), THREADS>>>(
            kind, rows, k.Tq, k.Tk, false, (int32_t *)a->kv_indices.data, (int32_t *)a->kv_num_blocks.data,
            (int32_t *)a->full_kv_indices.data, (int32_t *)a->full_kv_num_blocks.data);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess) {
        flex_lists_kernel<<<ladder_blocks(rows * k.Tk, THREADS), THREADS>>>(
            kind, rows, k.Tq, k.Tk, true, (int32_t *)a->q_indices.data, (int32_t *)a->q_num_blocks.data,
            (int32_t *)a->full_q_indices.data, (int32_t *)a->full_q_num_blocks.data);
        err = cudaGetLastError();
    }
    cudaFree(kind); /* waits for the kernels: cudaFree synchronizes the device */
    if (err != cudaSuccess)
        return ladder_fail(LADDER_ERR_CUDA, "building the block lists failed: %s", cudaGetErrorString(err));
    return LADDER_OK;
}
