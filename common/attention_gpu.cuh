/**
 * @file attention_gpu.cuh
 * @brief What every GPU rung of every attention algorithm runs the same way: the Delta preprocess, the hooks
 *        that make flash's kernels serve memeff (an additive bias, its gradient, dropout), the split-key
 *        forward's combine of partial (o, lse), and the deterministic reduction of a broadcast bias's gradient.
 *
 * The tiled and tensor-core kernels of each pass are one family: they compute S = scale * q.k, mask it, form
 * P and dS, and call the hooks below at four places:
 *   - the score: S += bias[b, h, i, j] (ladder_attn_bias_at());
 *   - the mask: the interval of ladder_attn_key_range() (common/attention.h);
 *   - what happens to P: dropout keeps P[i, j] with probability 1 - p and scales it by 1 / (1 - p)
 *     (ladder_attn_keep(), with the Philox counter of common/philox.h);
 *   - where dS also goes: the bias's gradient (ladder_attn_ds_sink), written once per element.
 * A plain flash problem leaves every hook off (ladder_attn_hooks zeroed), and the tensor-core rung compiles its
 * kernels without them (the policy's EXTRAS flag), so that flash pays nothing for memeff.
 */
#ifndef LADDER_ATTENTION_GPU_CUH
#define LADDER_ATTENTION_GPU_CUH

#include <stdint.h>

#include <type_traits>

#include "attention.h"
#include "cuda_check.cuh"
#include "mma.cuh"
#include "philox.h"

/** Element @p i of @p p as a float: f32 storage (T = float) as it is, 16-bit storage through T. */
template <class T> __device__ __forceinline__ float ladder_attn_elem(const void *p, int64_t i) {
    if constexpr (std::is_same_v<T, float>) return ((const float *)p)[i];
    else return ladder_to_float<T>(((const uint16_t *)p)[i]);
}

/** Store @p x as element @p i of @p p: f32 storage (T = float) as it is, 16-bit storage rounded through T. */
template <class T> __device__ __forceinline__ void ladder_attn_store(void *p, int64_t i, float x) {
    if constexpr (std::is_same_v<T, float>) ((float *)p)[i] = x;
    else ((uint16_t *)p)[i] = ladder_from_float<T>(x);
}

/** Where dS also goes: the bias's gradient, element [b, h, i, j] at p + b*s[0] + h*s[1] + i*s[2] + j*s[3]. */
struct ladder_attn_ds_sink {
    void *p;      /**< nullptr: dS goes nowhere else */
    int64_t s[4]; /**< strides in elements (0 along no axis: every element is written once) */
    bool f32;     /**< f32 storage (a scratch reduced afterwards), else the rung's element type */
};

/** The hooks of memory-efficient attention, zeroed for plain attention. */
struct ladder_attn_hooks {
    const void *bias;         /**< additive bias in the rung's element type; nullptr: none */
    int64_t sbias[4];         /**< its strides over [B, Hq, Sq, Sk]: 0 along a broadcast axis */
    ladder_attn_ds_sink dbias; /**< where dS goes (the bias's gradient), when asked for */
    float dropout_p;          /**< 0: no dropout */
    float keep_scale;         /**< 1 / (1 - p) */
    uint32_t keep_min;        /**< the smallest kept Philox output (ladder_dropout_keep_min()) */
    uint64_t seed, offset;    /**< Philox key and the element counter's start */
};

/** The bias at query row @p i and key @p j (positions along Sq and Sk) of head @p h, batch row @p b. */
template <class T>
__device__ __forceinline__ float ladder_attn_bias_at(const ladder_attn_hooks &k, int64_t b, int64_t h, int64_t i,
                                                     int64_t j) {
    return ladder_attn_elem<T>(k.bias, b * k.sbias[0] + h * k.sbias[1] + i * k.sbias[2] + j * k.sbias[3]);
}

/* Word @p w (0..3) of @p x by selects: indexing the array with a run-time @p w would put it in local memory. */
__device__ __forceinline__ uint32_t ladder_philox_word(const ladder_philox4 &x, int w) {
    return w == 0 ? x.w[0] : w == 1 ? x.w[1] : w == 2 ? x.w[2] : x.w[3];
}

/* Dropout's factor for a Philox output: 1 / (1 - p) where it is kept (x >= keep_min: uniform(x) > p), else 0. */
__device__ __forceinline__ float ladder_attn_factor(const ladder_attn_hooks &k, uint32_t x) {
    return x >= k.keep_min ? k.keep_scale : 0.0f;
}

/**
 * What P[b, h, i, j] is multiplied by after dropout: 1 / (1 - p) where it is kept, 0 where it is dropped. The
 * element draws Philox output offset + ((b*Hq + h)*Sq + i)*Sk + j (ladder_dropout_counter(), as PyTorch's
 * memory-efficient kernel); the forward and the backward regenerate the same mask from it.
 */
__device__ __forceinline__ float ladder_attn_keep(const ladder_attn_hooks &k, const ladder_attn_call &a, int64_t b,
                                                  int64_t h, int64_t i, int64_t j) {
    const uint64_t n = ladder_dropout_counter(k.offset, b, h, i, j, a.Hq, a.Sq, a.Sk);
    return ladder_attn_factor(k, ladder_philox_word(ladder_philox_block(k.seed, n / 4), (int)(n % 4)));
}

/**
 * Which of a lane's elements of an mma C fragment dropout keeps, for a warp's 16 rows by 8 * NB keys (the layout
 * of common/mma.cuh: lane 4g + t holds keys 8nb + 2t and 8nb + 2t + 1 of rows g and g + 8). @p n0 and @p n8 are
 * the Philox outputs that rows g and g + 8 draw at the tile's first key; bit 2nb + e of kept[k] is key 8nb + 2t + e
 * of row g + 8k.
 *
 * One Philox block gives four consecutive outputs, and lanes t = 2u and 2u + 1 hold the four consecutive keys
 * 8nb + 4u .. 8nb + 4u + 3 of each row. When every row's draws start on a multiple of four (the usual case: Sk and
 * the offset multiples of four), each block is drawn once: the even lane draws row g's, the odd lane row g + 8's,
 * and one shuffle trades the halves the partner holds. Otherwise each lane draws its own pairs, a block per pair.
 */
template <int NB>
__device__ __forceinline__ void ladder_attn_kept_frag(const ladder_attn_hooks &k, uint64_t n0, uint64_t n8, int lane,
                                                      uint32_t (&kept)[2]) {
    static_assert(NB <= 8, "a lane's four draws per n8 block fit one word");
    const int t = lane % 4;
    kept[0] = kept[1] = 0;
    if (__all_sync(0xffffffffu, n0 % 4 == 0 && n8 % 4 == 0)) {
        const bool odd = t & 1;
        const uint64_t first = (odd ? n8 : n0) + 4 * (t / 2); /* this lane's row, its first quad */
        uint32_t drawn = 0;                                     /* bit 4nb + w: word w of block nb */
#pragma unroll 1 /* unrolled, the Philox rounds of every block interleave and spill */
        for (int nb = 0; nb < NB; nb++) {
            const ladder_philox4 x = ladder_philox_block(k.seed, (first + 8 * nb) / 4);
#pragma unroll
            for (int w = 0; w < 4; w++) drawn |= (uint32_t)(x.w[w] >= k.keep_min) << (4 * nb + w);
        }
        const uint32_t partner = __shfl_xor_sync(0xffffffffu, drawn, 1);
        /* row g: words 0-1 of the even lane's blocks, 2-3 of them for the odd lane; row g + 8 likewise */
        const uint32_t row0 = odd ? partner : drawn, row8 = odd ? drawn : partner, shift = odd ? 2 : 0;
#pragma unroll
        for (int nb = 0; nb < NB; nb++) {
            kept[0] |= ((row0 >> (4 * nb + shift)) & 3u) << (2 * nb);
            kept[1] |= ((row8 >> (4 * nb + shift)) & 3u) << (2 * nb);
        }
        return;
    }
#pragma unroll 1
    for (int nb = 0; nb < NB; nb++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const uint64_t n = (r ? n8 : n0) + 8 * nb + 2 * t;
            const ladder_philox4 x = ladder_philox_block(k.seed, n / 4);
            const int w = (int)(n % 4);
            const uint32_t second = w < 3 ? ladder_philox_word(x, w + 1) : ladder_philox_block(k.seed, n / 4 + 1).w[0];
            kept[r] |= ((uint32_t)(ladder_philox_word(x, w) >= k.keep_min) | (uint32_t)(second >= k.keep_min) << 1)
                       << (2 * nb);
        }
}

/**
 * Dropout's kept bits of a warp's 16 rows from query position @p q0 (rows q0 + g and q0 + g + 8 for lane 4g + t)
 * and its 8 * NB keys from key position @p k0, of head @p h, batch row @p b: ladder_attn_kept_frag() at their Philox
 * counters. Every bit is set without dropout (then keep_scale is 1, so kept ? keep_scale : 0 serves both).
 */
template <int NB>
__device__ __forceinline__ void ladder_attn_kept_rows(const ladder_attn_hooks &k, const ladder_attn_call &a, int64_t b,
                                                      int64_t h, int64_t q0, int64_t k0, int lane, uint32_t (&kept)[2]) {
    kept[0] = kept[1] = ~0u;
    if (k.dropout_p <= 0.0f) return;
    const uint64_t n0 = ladder_dropout_counter(k.offset, b, h, q0 + lane / 4, k0, a.Hq, a.Sq, a.Sk);
    ladder_attn_kept_frag<NB>(k, n0, n0 + 8 * (uint64_t)a.Sk, lane, kept);
}

/** dS[b, h, i, j] into the sink (the bias's gradient), rounded to T unless the sink is an f32 scratch. */
template <class T>
__device__ __forceinline__ void ladder_attn_sink_ds(const ladder_attn_ds_sink &d, int64_t b, int64_t h, int64_t i,
                                                    int64_t j, float dS) {
    const int64_t at = b * d.s[0] + h * d.s[1] + i * d.s[2] + j * d.s[3];
    if (d.f32) ((float *)d.p)[at] = dS;
    else ladder_attn_store<T>(d.p, at, dS);
}

/**
 * dS of a lane's pair, @p ds[0] at element @p at of the sink and, when @p second, ds[1] at at + s[3]; one 8-byte
 * (f32 scratch) or 4-byte (16-bit storage) store where the pair is contiguous and aligned.
 */
template <class T>
__device__ __forceinline__ void ladder_attn_sink_pair(const ladder_attn_ds_sink &d, int64_t at, bool second,
                                                      const float (&ds)[2]) {
    const bool contiguous = second && d.s[3] == 1;
    if (d.f32) {
        float *p = (float *)d.p + at;
        if (contiguous && ((uintptr_t)p & 7) == 0) *(float2 *)p = make_float2(ds[0], ds[1]);
        else {
            p[0] = ds[0];
            if (second) p[d.s[3]] = ds[1];
        }
        return;
    }
    if constexpr (sizeof(T) == 2) {
        uint16_t *p = (uint16_t *)d.p + at;
        if (contiguous && ((uintptr_t)p & 3) == 0) {
            *(uint32_t *)p = ladder_pack2_float<T>(ds[0], ds[1]);
            return;
        }
    }
    ladder_attn_store<T>(d.p, at, ds[0]);
    if (second) ladder_attn_store<T>(d.p, at + d.s[3], ds[1]);
}

/**
 * The Delta preprocess: Delta_i = rowsum(dO_i * O_i) - dlse_i (common/attention.h), one warp per row [b, h, i].
 * @p dout has strides @p sdo (elements of T's storage), @p o is contiguous [B, Hq, Sq, Dv].
 */
template <class T>
__global__ void ladder_attn_delta_kernel(ladder_attn_call a, const void *dout, int64_t sdo0, int64_t sdo1,
                                         int64_t sdo2, int64_t sdo3, const void *o, float *delta) {
    const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= a.B * a.Hq * a.Sq) return; /* a whole warp: rows are per warp */
    const int64_t i = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
    const int64_t at = b * sdo0 + h * sdo1 + i * sdo2;
    float acc = 0.0f;
    for (int64_t e = lane; e < a.Dv; e += 32)
        acc += ladder_attn_elem<T>(dout, at + e * sdo3) * ladder_attn_elem<T>(o, row * a.Dv + e);
    for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) delta[row] = acc - (a.dlse ? a.dlse[b * a.sdlse[0] + h * a.sdlse[1] + i * a.sdlse[2]] : 0.0f);
}

/** Launch ladder_attn_delta_kernel over every row of @p a. */
template <class T>
ladder_status ladder_attn_delta(const ladder_attn_call &a, const void *dout, const int64_t *sdo, const void *o,
                                float *delta) {
    const int64_t threads = a.B * a.Hq * a.Sq * 32;
    ladder_attn_delta_kernel<T><<<(unsigned)((threads + 255) / 256), 256>>>(a, dout, sdo[0], sdo[1], sdo[2], sdo[3],
                                                                             o, delta);
    LADDER_LAUNCH_CHECK("ladder_attn_delta_kernel");
    return LADDER_OK;
}

/**
 * The split-key forward's combine (chapter 3, Lab 1): a row whose keys were split among @p splits blocks has
 * from each a partial o_s = (sum P V) / l_s over its keys and lse_s = m_s + log l_s, and the whole row is
 *     lse = log sum_s exp(lse_s),   o = sum_s exp(lse_s - lse) o_s
 * (a split that saw no key has lse_s = -inf and weighs 0; a row no split saw gets o = 0 and lse = -inf). One warp
 * per row of @p rows; the partials are [splits][rows][Dv] and [splits][rows], fp32; o is stored as T.
 */
template <class T>
__global__ void ladder_attn_combine_kernel(int64_t rows, int64_t Dv, int64_t splits, const float *o_part,
                                           const float *lse_part, void *o, float *lse) {
    const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return; /* a whole warp */
    float m = -INFINITY;
    for (int64_t s = 0; s < splits; s++) m = fmaxf(m, lse_part[s * rows + row]);
    float sum = 0.0f; /* sum_s exp(lse_s - m); a NaN partial makes it NaN, and the row NaN */
    for (int64_t s = 0; s < splits; s++) sum += m == -INFINITY ? 0.0f : expf(lse_part[s * rows + row] - m);
    const float L = ladder_attn_lse(m, sum);
    for (int64_t e = lane; e < Dv; e += 32) {
        float acc = 0.0f;
        for (int64_t s = 0; s < splits; s++) {
            const float ls = lse_part[s * rows + row];
            if (ls != -INFINITY) acc += expf(ls - L) * o_part[(s * rows + row) * Dv + e];
        }
        ladder_attn_store<T>(o, row * Dv + e, acc);
    }
    if (lane == 0) lse[row] = L;
}

/** Launch ladder_attn_combine_kernel over @p rows rows. */
template <class T>
ladder_status ladder_attn_combine(int64_t rows, int64_t Dv, int64_t splits, const float *o_part, const float *lse_part,
                                  void *o, float *lse) {
    ladder_attn_combine_kernel<T><<<(unsigned)((rows * 32 + 255) / 256), 256>>>(rows, Dv, splits, o_part, lse_part, o,
                                                                                lse);
    LADDER_LAUNCH_CHECK("ladder_attn_combine_kernel");
    return LADDER_OK;
}

/**
 * dbias[b', h', i', j'] = the sum of dS[b, h, i, j] over every (b, h, i, j) that reads it: over the axes where
 * the bias has one entry and the problem more. One thread per dbias element, summing the full f32 dS scratch
 * [B, Hq, Sq, Sk] in a fixed order, so the result repeats bitwise. @p shape is the bias's, @p dbias contiguous.
 */
template <class T>
__global__ void ladder_attn_dbias_reduce_kernel(const float *ds, int64_t B, int64_t Hq, int64_t Sq, int64_t Sk,
                                                int64_t n0, int64_t n1, int64_t n2, int64_t n3, void *dbias) {
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n0 * n1 * n2 * n3) return;
    const int64_t j = x % n3, i = x / n3 % n2, h = x / (n3 * n2) % n1, b = x / (n3 * n2 * n1);
    const int64_t bb = n0 == 1 ? B : 1, hh = n1 == 1 ? Hq : 1, ii = n2 == 1 ? Sq : 1, jj = n3 == 1 ? Sk : 1;
    float acc = 0.0f;
    for (int64_t b1 = 0; b1 < bb; b1++)
        for (int64_t h1 = 0; h1 < hh; h1++)
            for (int64_t i1 = 0; i1 < ii; i1++)
                for (int64_t j1 = 0; j1 < jj; j1++)
                    acc += ds[(((b + b1) * Hq + h + h1) * Sq + i + i1) * Sk + j + j1];
    ladder_attn_store<T>(dbias, x, acc);
}

/** Launch ladder_attn_dbias_reduce_kernel for a bias of shape @p shape. */
template <class T>
ladder_status ladder_attn_dbias_reduce(const ladder_attn_call &a, const float *ds, const int64_t *shape, void *dbias) {
    const int64_t n = shape[0] * shape[1] * shape[2] * shape[3];
    ladder_attn_dbias_reduce_kernel<T><<<(unsigned)((n + 255) / 256), 256>>>(ds, a.B, a.Hq, a.Sq, a.Sk, shape[0],
                                                                              shape[1], shape[2], shape[3], dbias);
    LADDER_LAUNCH_CHECK("ladder_attn_dbias_reduce_kernel");
    return LADDER_OK;
}

#endif
