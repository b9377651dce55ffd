/**
 * @file flex_gpu.cuh
 * @brief What flex's fast GPU rungs share: its hooks for the attention family (the mods' view, the block lists, the
 *        mask mods, where each buffer read's share of dS goes), the score mod as a compile-time id, and the
 *        deterministic reduction of the buffer gradients around a family backward.
 *
 * A buffer gradient is a reduction over every score that read the element (common/flex.h). The family's dK/dV pass
 * visits every visible (b, h, i, j) once, so, as memeff does for a broadcast bias (common/memeff_gpu.cuh), it writes
 * read r's share dS * dS/dx into a full f32 scratch [B, Hq, Sq, Sk] (zero where no block looked), and two small
 * kernels sum it in a fixed order, with no atomics:
 *   1. lines: every built-in read takes an element that depends on the position through one line of the Sq x Sk
 *      plane only (flex_read_line()): a diagonal j - i (alibi, rel_bias, t5_bias), a row i (bq) or a column j (bk).
 *      One thread per (head, line) sums its line over the batch rows, in order.
 *   2. scatter: one thread per head walks its lines in order and adds each line's sum into the element the mod says
 *      that line reads (asked at a position on the line). Each element's sum runs in one fixed order.
 * Preconditions of that reduction (true of every built-in mod; a new mod names its lines in flex_read_line()): the
 * element a read takes is the same along its line and in every batch row, and a score of head h reads only row h of
 * a [Hq, ...] buffer (so the threads of different heads never write one element).
 */
#ifndef LADDER_FLEX_GPU_CUH
#define LADDER_FLEX_GPU_CUH

#include <type_traits>

#include "attention_gpu.cuh"
#include "cuda_util.cuh"
#include "flex_rungs.h"

/** flex's hooks: zeroed for every other algorithm (and not read by their kernels: the policy says so). */
struct ladder_flex_hooks {
    ladder_flex_env env;                       /**< the mods' sizes, options and buffers */
    flex_blocks blocks;                        /**< the block lists (device memory) */
    unsigned masks;                            /**< the mask mods, checked in partial tiles */
    float *dbuf[LADDER_FLEX_MAX_READS];        /**< read r's share dS * dS/dx, [B, Hq, Sq, Sk] f32; nullptr: not asked */
};

/** flex's hooks for problem @p p and tensors @p a (no buffer-gradient scratch yet). */
inline ladder_flex_hooks ladder_flex_hooks_of(const ladder_flex_problem *p, const ladder_flex_args *a) {
    ladder_flex_hooks k = {};
    k.env = ladder_flex_env_of(p, a);
    k.blocks = flex_blocks_of(a);
    k.masks = (unsigned)p->mask_mods;
    return k;
}

/** Call @p f with the score mod @p mod as a std::integral_constant, so that it is a template argument there: one
 *  instantiation per registered score mod, each with its mod inlined (flex_mods.h's switch folds away). */
template <int M = 0, class F> auto ladder_flex_with_mod(int mod, F f) {
    if constexpr (M + 1 < LADDER_FLEX_SCORE_COUNT)
        if (mod != M) return ladder_flex_with_mod<M + 1>(mod, f);
    return f(std::integral_constant<int, M>{});
}

/** The line of the Sq x Sk plane along which the element a read takes stays the same. */
enum ladder_flex_line { LADDER_FLEX_DIAGONAL, LADDER_FLEX_ROW, LADDER_FLEX_COLUMN };

/** The line of read @p r of score mod @p mod (one line per mod that reads a buffer: a new mod adds its own here). */
inline ladder_flex_line flex_read_line(int mod, int r) {
    static_assert(LADDER_FLEX_SCORE_COUNT == 6, "a new score mod: name the line of each of its reads here");
    if (mod == LADDER_FLEX_BIAS_QK) return r == 0 ? LADDER_FLEX_ROW : LADDER_FLEX_COLUMN; /* bq[h, i], bk[h, j] */
    return LADDER_FLEX_DIAGONAL; /* alibi slopes[h] (every diagonal), rel_bias[h, j - i], t5_bias[h, bucket(j - i)] */
}

/** Lines of each kind: Sq + Sk - 1 diagonals (n = j - i + Sq - 1), Sq rows, Sk columns. */
inline int64_t flex_lines(ladder_flex_line line, int64_t Sq, int64_t Sk) {
    return line == LADDER_FLEX_DIAGONAL ? Sq + Sk - 1 : line == LADDER_FLEX_ROW ? Sq : Sk;
}

/** The positions (i, j) of line @p n: i from *i0 to *i1 (exclusive), j = i + *dj (diagonals, columns) or every j
 *  (rows: *i1 = *i0 + 1, the row's keys walked by the caller). */
__device__ __forceinline__ void flex_line_first(ladder_flex_line line, int64_t n, int64_t Sq, int64_t Sk, int64_t *i0,
                                                int64_t *i1, int64_t *dj) {
    if (line == LADDER_FLEX_DIAGONAL) {
        *dj = n - (Sq - 1);                 /* j - i */
        *i0 = *dj < 0 ? -*dj : 0;           /* j >= 0 */
        *i1 = Sk - *dj < Sq ? Sk - *dj : Sq; /* j < Sk */
    } else if (line == LADDER_FLEX_ROW) {
        *i0 = n, *i1 = n + 1, *dj = 0;
    } else {
        *i0 = 0, *i1 = Sq, *dj = 0;
    }
}

/**
 * 1. One thread per (head h, line n) of kind LINE: the sum of read r's shares @p c [B, Hq, Sq, Sk] along the line,
 * batch rows outer, positions in order, into lines[h * N + n]. Neighbouring threads take neighbouring diagonals or
 * columns, so their reads are coalesced (rows are not: a row's thread walks it alone).
 */
template <ladder_flex_line LINE>
__global__ void ladder_flex_line_sum_kernel(const float *c, int64_t B, int64_t Hq, int64_t Sq, int64_t Sk, int64_t N,
                                            float *lines) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= Hq * N) return;
    const int64_t h = t / N, n = t % N;
    int64_t i0, i1, dj;
    flex_line_first(LINE, n, Sq, Sk, &i0, &i1, &dj);
    float acc = 0.0f;
    for (int64_t b = 0; b < B; b++) {
        const float *plane = c + (b * Hq + h) * Sq * Sk;
        if constexpr (LINE == LADDER_FLEX_ROW)
            for (int64_t j = 0; j < Sk; j++) acc += plane[n * Sk + j];
        else
            for (int64_t i = i0; i < i1; i++) acc += plane[i * Sk + (LINE == LADDER_FLEX_COLUMN ? n : i + dj)];
    }
    lines[t] = acc;
}

/**
 * 2. One thread per head h: each of its lines' sums, in order, added into the element of @p grad that read @p r of
 * score mod MOD takes on that line (asked of the mod at the line's first position; the buffer derivative is
 * already in the sums, so s = 0 is as good as any).
 */
template <int MOD>
__global__ void ladder_flex_line_scatter_kernel(const float *lines, int64_t Hq, ladder_flex_line line, int64_t N,
                                                ladder_flex_env env, int r, float *grad) {
    const int64_t h = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= Hq) return;
    for (int64_t n = 0; n < N; n++) {
        int64_t i0, i1, dj;
        flex_line_first(line, n, env.Sq, env.Sk, &i0, &i1, &dj); /* every line holds a position: i0 < i1 */
        const int64_t i = i0, j = line == LADDER_FLEX_COLUMN ? n : i0 + dj;
        const ladder_flex_grad g = ladder_flex_score_grad(MOD, 0.0f, &env, 0, h, i, j);
        grad[g.at[r]] += lines[h * N + n];
    }
}

/**
 * Run @p bwd (the family's backward, reading the hooks @p k) so that every buffer gradient of @p a that is asked for
 * is written: each read r whose buffer's gradient is asked gets its f32 share scratch (k.dbuf[r], cleared: the
 * elements no block visits are 0), then each such gradient is cleared and each of its reads, in order, summed into it
 * (a buffer read twice gets both reads' sums, the first one's first). The gradients of buffers no mod reads are 0.
 */
template <int MOD, class Bwd>
ladder_status ladder_flex_bwd_with_dbuf(const ladder_flex_problem *p, const ladder_flex_args *a, ladder_flex_hooks &k,
                                        Bwd bwd) {
    const ladder_attention_problem *t = &p->attn;
    const ladder_flex_score_spec *spec = &ladder_flex_score_mods[MOD];
    const int64_t plane = t->B * t->Hq * t->Sq * t->Sk;
    ladder_scratch share[LADDER_FLEX_MAX_READS], lines[LADDER_FLEX_MAX_READS];
    const ladder_tensor *grad[LADDER_FLEX_MAX_READS] = {};
    for (int r = 0; r < spec->n_reads; r++) {
        const ladder_tensor *g = (const ladder_tensor *)((const char *)a + ladder_flex_buffer(spec->reads[r])->grad);
        if (!g->data) continue;
        grad[r] = g;
        LADDER_TRY(share[r].alloc(sizeof(float) * (size_t)plane));
        LADDER_CUDA_TRY(cudaMemsetAsync(share[r].ptr, 0, sizeof(float) * (size_t)plane, 0));
        k.dbuf[r] = (float *)share[r].ptr;
    }
    LADDER_TRY(bwd());
    for (int i = 0; i < ladder_flex_n_buffers; i++) { /* every float gradient asked for starts at 0 */
        const ladder_flex_buffer_spec *s = &ladder_flex_buffers[i];
        const ladder_tensor *g = s->grad ? (const ladder_tensor *)((const char *)a + s->grad) : nullptr;
        if (g && g->data) LADDER_CUDA_TRY(cudaMemsetAsync(g->data, 0, sizeof(float) * (size_t)ladder_tensor_numel(g), 0));
    }
    for (int r = 0; r < spec->n_reads; r++) {
        if (!grad[r]) continue;
        const ladder_flex_line line = flex_read_line(MOD, r);
        const int64_t N = flex_lines(line, t->Sq, t->Sk);
        LADDER_TRY(lines[r].alloc(sizeof(float) * (size_t)(t->Hq * N)));
        const float *c = (const float *)share[r].ptr;
        float *sums = (float *)lines[r].ptr;
        const unsigned blocks = ladder_blocks(t->Hq * N, 256);
        if (line == LADDER_FLEX_DIAGONAL)
            ladder_flex_line_sum_kernel<LADDER_FLEX_DIAGONAL><<<blocks, 256>>>(c, t->B, t->Hq, t->Sq, t->Sk, N, sums);
        else if (line == LADDER_FLEX_ROW)
            ladder_flex_line_sum_kernel<LADDER_FLEX_ROW><<<blocks, 256>>>(c, t->B, t->Hq, t->Sq, t->Sk, N, sums);
        else
            ladder_flex_line_sum_kernel<LADDER_FLEX_COLUMN><<<blocks, 256>>>(c, t->B, t->Hq, t->Sq, t->Sk, N, sums);
        LADDER_LAUNCH_CHECK("ladder_flex_line_sum_kernel");
        ladder_flex_line_scatter_kernel<MOD><<<ladder_blocks(t->Hq, 64), 64>>>(
            (const float *)lines[r].ptr, t->Hq, line, N, k.env, r, (float *)grad[r]->data);
        LADDER_LAUNCH_CHECK("ladder_flex_line_scatter_kernel");
    }
    return LADDER_OK;
}

#endif
