/**
 * @file flex_gpu.cuh
 * @brief What flex's fast GPU rungs share: its hooks for the attention family (the mods' view, the block lists, the
 *        mask mods, where each buffer read's share of dS goes), the score mod as a compile-time id, and the
 *        deterministic reduction of the buffer gradients, inside the family's dQ pass and around its backward.
 *
 * A buffer gradient is a reduction over every score that read the element (common/flex.h), and every built-in read
 * takes an element that is the same along one line of the Sq x Sk plane and in every batch row: a diagonal j - i
 * (alibi, rel_bias, t5_bias), a row i (bq) or a column j (bk) (common/flex_lines.h). So the gradient is a sum of line
 * sums, found in three steps, each sum in a fixed order, with no atomics:
 *   1. tile (in the family's dQ pass, which visits every seen (b, h, i, j) once): a block owns a query tile of one
 *      head and batch row and walks its key tiles. For each it stores read r's shares dS * dS/dx in shared memory
 *      (flex_share_tile, skewed so that the tile's diagonals are columns), sums them along the tile's lines, one
 *      thread per line, into the block's own row of partials in global memory, which it cleared first
 *      (flex_clear_partials()): the tiled rung adds each tile's sums into it (flex_add_tile_sums()); the tensor-core
 *      rung, whose tiles come in ascending order, stores each slot once, holding a row's sum until the block's last
 *      tile and a diagonal's until the next tile has added its part (flex_store_tile_sums(), flex_flush_lines()).
 *      The scratch is a row of lines per query tile (k.part[r]): B * Hq * Sq / BR * (Sk + BR - 1) floats for
 *      diagonals, not the B * Hq * Sq * Sk of one share per score.
 *   2. plane: one thread per (head, line) adds that line's partials over the batch rows and the query tiles.
 *   3. scatter: the lines that read one element are consecutive, so each element's sum is its run of lines', added
 *      by chunks of lines and then over the chunks a run crosses, into the element the mod says they read (asked at
 *      a position on the line). Each element's sum runs in one fixed order.
 * The partials are fp32 (a tile's line sums too); the plane's sums run in double, as the cpu and naive rungs sum.
 * Preconditions of that reduction (true of every built-in mod; a new mod names its lines in ladder_flex_read_line()):
 * the element a read takes is the same along its line and in every batch row, the lines that read one element are
 * consecutive, and a score of head h reads only row h of a [Hq, ...] buffer (so the threads of different heads never
 * write one element).
 */
#ifndef LADDER_FLEX_GPU_CUH
#define LADDER_FLEX_GPU_CUH

#include <type_traits>

#include "attention_gpu.cuh"
#include "cuda_util.cuh"
#include "flex_lines.h"
#include "flex_rungs.h"

/** flex's hooks: zeroed for every other algorithm (and not read by their kernels: the policy says so). */
struct ladder_flex_hooks {
    ladder_flex_env env;                       /**< the mods' sizes, options and buffers */
    flex_blocks blocks;                        /**< the block lists (device memory) */
    unsigned masks;                            /**< the mask mods, checked in partial tiles */
    float *part[LADDER_FLEX_MAX_READS];        /**< read r's partial line sums, a row per query tile of the dQ pass
                                                    (ladder_flex_partial_numel(), f32); nullptr: not asked */
};

/** flex's hooks for problem @p p and tensors @p a (no partials yet). */
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

/* ---- 1. tile: inside the dQ pass -------------------------------------------------------------------------------- */

/*
 * The shares of one BR x BC tile in shared memory, f32, one array of SIZE floats per read, stored skewed: element
 * (r, c) at row r, column c - r + BR. Then each diagonal of the tile is a column of the array (tile line l = c - r +
 * BR - 1 in column l + 1), each row a contiguous run, and each column a walk of stride LD - 1. The triangles that no
 * element lands in are cleared when the block starts (flex_clear_shares()) and no tile writes them, so a walk down a
 * column of the array reads zeros where its diagonal misses a row, with no test per element. Row pitch: LD - 1 is 8
 * mod 32 words, so that the pairs of neighbouring keys that a warp stores (8 bytes each, aligned by the one column of
 * margin), 4 rows of them, meet the 32 banks once, and a row's run starts 16-byte aligned.
 */
template <int BR, int BC> struct flex_share_tile {
    static_assert((BR + BC) % 32 == 0, "LD - 1 = BR + BC + 8 is 8 mod 32");
    static constexpr int LD = BR + BC + 9; /* at least the BR + BC columns that elements land in */
    static constexpr int SIZE = BR * LD;
    static constexpr int HOLDERS = LADDER_FLEX_MAX_READS * BC; /* the threads of flex_store_tile_sums() */
    /** Where element (r, c) of read rd's tile lies in @p tiles (every read's, one after another). */
    __device__ static float *at(float *tiles, int rd, int r, int c) {
        return tiles + rd * SIZE + r * (LD - 1) + c + BR;
    }
};

/* The reads up to the last whose gradient is asked in hooks @p f (0 when none is). */
__host__ __device__ inline int flex_asked_reads(const ladder_flex_hooks &f) {
    int reads = 0;
    for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++)
        if (f.part[rd]) reads = rd + 1;
    return reads;
}

/*
 * What a thread of flex_store_tile_sums() holds between tiles, in shared memory past the share tiles, one slot for
 * each of its HOLDERS threads (each serves one line of one read, the same every tile, so no slot is shared): the sum
 * it has not stored yet, and the slot of partials it goes to (-1: none).
 */
template <int BR, int BC> struct flex_held {
    float *sum;
    int64_t *slot;
    __device__ flex_held(const ladder_flex_hooks &f, float *tiles)
        : sum(tiles + flex_asked_reads(f) * flex_share_tile<BR, BC>::SIZE),
          slot((int64_t *)(sum + flex_share_tile<BR, BC>::HOLDERS)) {}
};

/* Bytes of shared memory for the share tiles of a pass whose hooks are @p f (every read up to the last whose gradient
 * is asked) and, with HOLD (flex_store_tile_sums()), the held sums after them; 0 when no gradient is asked. */
template <int BR, int BC, bool HOLD> __host__ __device__ size_t flex_share_bytes(const ladder_flex_hooks &f) {
    using S = flex_share_tile<BR, BC>;
    static_assert(S::SIZE % 2 == 0 && S::HOLDERS % 2 == 0, "the held slots are 8-byte aligned");
    const int reads = flex_asked_reads(f);
    if (!reads) return 0;
    return sizeof(float) * (size_t)(reads * S::SIZE) + (HOLD ? (sizeof(float) + sizeof(int64_t)) * S::HOLDERS : 0);
}

/* Clear the share tiles of the reads whose gradient is asked, by the block's THREADS threads, before its first tile
 * (a __syncthreads() between): the triangles outside the skewed tile stay zero from here on. With HOLD, each held
 * sum starts at 0, with no slot. */
template <int BR, int BC, int THREADS, bool HOLD>
__device__ __forceinline__ void flex_clear_shares(const ladder_flex_hooks &f, float *tiles) {
    if (!flex_asked_reads(f)) return;
#pragma unroll
    for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++)
        if (f.part[rd])
            for (int x = threadIdx.x; x < flex_share_tile<BR, BC>::SIZE; x += THREADS)
                tiles[rd * flex_share_tile<BR, BC>::SIZE + x] = 0.0f;
    if (!HOLD || threadIdx.x >= flex_share_tile<BR, BC>::HOLDERS) return;
    const flex_held<BR, BC> held(f, tiles);
    held.sum[threadIdx.x] = 0.0f, held.slot[threadIdx.x] = -1;
}

/* Read rd's row of partials for query tile qt (tiles of BR rows) of head h in batch row b: [B, Hq, Tq, width]. */
template <int BR>
__device__ __forceinline__ float *flex_partials(const ladder_flex_hooks &f, int rd, ladder_flex_line line, int64_t Hq,
                                                int64_t b, int64_t h, int64_t qt) {
    const int64_t Tq = (f.env.Sq + BR - 1) / BR;
    return f.part[rd] + ((b * Hq + h) * Tq + qt) * ladder_flex_partial_width(line, f.env.Sk, BR);
}

/* Clear the block's rows of partials (query tile qt of head h, batch row b), by its THREADS threads, before its first
 * tile adds into them (a __syncthreads() between). Only this block writes them: a slot that none of its tiles crosses
 * stays 0, which is what the plane's sum reads there. */
template <int MOD, int BR, int THREADS>
__device__ __forceinline__ void flex_clear_partials(const ladder_flex_hooks &f, int64_t Hq, int64_t b, int64_t h,
                                                    int64_t qt) {
#pragma unroll
    for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++) {
        if (!f.part[rd]) continue;
        const ladder_flex_line line = ladder_flex_read_line(MOD, rd);
        float *row = flex_partials<BR>(f, rd, line, Hq, b, h, qt);
        for (int64_t x = threadIdx.x; x < ladder_flex_partial_width(line, f.env.Sk, BR); x += THREADS) row[x] = 0.0f;
    }
}

/*
 * The sum of one skewed share tile (@p tile, flex_share_tile) along tile line @p l of kind @p line, in fp32: element
 * m of the line (the tile's row m; along a row, its column m) into sum m % 4, so that four adds are in flight, and
 * then (s0 + s1) + (s2 + s3): the same order every time. Neighbouring lanes take neighbouring lines: down a diagonal
 * or a column they read neighbouring words of one row of the array; along a row a lane reads 16 bytes a step.
 */
template <int BR, int BC>
__device__ __forceinline__ float flex_tile_line_sum(ladder_flex_line line, const float *tile, int l) {
    using S = flex_share_tile<BR, BC>;
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (line == LADDER_FLEX_ROW) {
        const float4 *run = (const float4 *)(tile + l * (S::LD - 1) + BR);
#pragma unroll
        for (int q = 0; q < BC / 4; q++) {
            const float4 v = run[q];
            s[0] += v.x, s[1] += v.y, s[2] += v.z, s[3] += v.w;
        }
    } else {
        /* a diagonal is column l + 1 of the array (zero where it misses a row); column c of the tile steps by LD - 1 */
        const bool diagonal = line == LADDER_FLEX_DIAGONAL;
        const float *first = tile + (diagonal ? l + 1 : l + BR);
#pragma unroll
        for (int m = 0; m < BR; m++) s[m % 4] += first[m * (diagonal ? S::LD : S::LD - 1)];
    }
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/*
 * The tiled rung's line sums: after a tile's shares are stored (and a __syncthreads()), each read whose gradient is
 * asked, summed along each line the tile crosses, one thread per line and read (read 0's lines on the first threads,
 * read 1's on the next), and added into the block's row of partials at the line's slot. The tile: rows of query tile
 * qt of head h in batch row b, keys from @p j0 along Sk; slots past the width hold only keys past Sk (zero shares) and
 * are skipped. A slot is read, added to and written by one thread per tile, and the block's tiles come one after
 * another with a barrier between (its loop's), so each partial sums its tiles in the order the block visits them.
 */
template <int MOD, int BR, int BC, int THREADS>
__device__ __forceinline__ void flex_add_tile_sums(const ladder_flex_hooks &f, const float *tiles, int64_t Hq,
                                                   int64_t b, int64_t h, int64_t qt, int64_t j0) {
    static_assert(LADDER_FLEX_MAX_READS * (BR + BC - 1) <= THREADS, "a thread for each line of each read");
    int l = threadIdx.x;
#pragma unroll
    for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++) {
        const ladder_flex_line line = ladder_flex_read_line(MOD, rd);
        const int lines = ladder_flex_tile_lines(line, BR, BC);
        const int64_t slot = ladder_flex_tile_slot(line, l, j0);
        if (f.part[rd] && l >= 0 && l < lines && slot < ladder_flex_partial_width(line, f.env.Sk, BR))
            flex_partials<BR>(f, rd, line, Hq, b, h, qt)[slot] +=
                flex_tile_line_sum<BR, BC>(line, tiles + rd * flex_share_tile<BR, BC>::SIZE, l);
        l -= lines;
    }
}

/* The threads that sum a read's lines of kind @p line: one per row, or per column, or per diagonal that starts in the
 * tile's first row (the BR - 1 that start in its first column are summed by the thread of the diagonal BC along). */
template <int BR, int BC> __device__ __forceinline__ int flex_line_threads(ladder_flex_line line) {
    return line == LADDER_FLEX_ROW ? BR : BC;
}

/*
 * The tensor-core rung's line sums: after a tile's shares are stored (and a __syncthreads()), each read whose gradient
 * is asked, summed along each line the tile crosses, one thread per line (read 0's lines on the first threads, read
 * 1's on the next), into the block's row of partials (tile: rows of query tile qt of head h in batch row b, keys from @p j0 along Sk). Every
 * partial is stored once, never read back, so no tile waits on global memory:
 *   - a column's sum is the tile's alone: stored at once;
 *   - a row's sums are added over the block's tiles in the thread's held sum, stored by flex_flush_lines();
 *   - diagonal l < BC (slot j0 + l) is stored at once, with, for l < BR - 1, the held sum of diagonal l + BC of the
 *     tile before when that tile was the neighbour at j0 - BC (the same slot); otherwise that held sum is stored at
 *     its own slot. Then diagonal l + BC's sum is held (slot j0 + BC + l) for the next tile.
 * Slots past the width hold only keys past Sk (zero shares) and are skipped. The tiles must come in ascending order,
 * each a whole BC past a multiple of BC (as the rung's list_tiles walks them), with a barrier between (the loop's):
 * then only neighbours share slots, and each partial sums its tiles in the order the block visits them.
 */
/* Call @p fn(rd, line, l) if this thread serves line l (of kind @p line) of read rd whose gradient is asked: the reads'
 * lines one after another on the block's threads, flex_line_threads() of them per read. Each thread serves the same
 * line of the same read at every tile, which lets it hold a sum between tiles. */
template <int MOD, int BR, int BC, class F>
__device__ __forceinline__ void flex_for_own_line(const ladder_flex_hooks &f, F fn) {
    int l = threadIdx.x;
#pragma unroll
    for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++) {
        const ladder_flex_line line = ladder_flex_read_line(MOD, rd);
        const int n = flex_line_threads<BR, BC>(line);
        if (f.part[rd] && l >= 0 && l < n) fn(rd, line, l);
        l -= n;
    }
}

template <int MOD, int BR, int BC, int THREADS>
__device__ __forceinline__ void flex_store_tile_sums(const ladder_flex_hooks &f, float *tiles, int64_t Hq, int64_t b,
                                                     int64_t h, int64_t qt, int64_t j0) {
    static_assert(flex_share_tile<BR, BC>::HOLDERS <= THREADS && BR <= BC, "a thread for each line of each read");
    const flex_held<BR, BC> held(f, tiles);
    const int t = threadIdx.x;
    flex_for_own_line<MOD, BR, BC>(f, [&](int rd, ladder_flex_line line, int l) {
        const float *tile = tiles + rd * flex_share_tile<BR, BC>::SIZE;
        float *row = flex_partials<BR>(f, rd, line, Hq, b, h, qt);
        const int64_t width = ladder_flex_partial_width(line, f.env.Sk, BR);
        const float sum = flex_tile_line_sum<BR, BC>(line, tile, l);
        if (line == LADDER_FLEX_ROW) held.sum[t] += sum;
        else if (line == LADDER_FLEX_COLUMN) {
            if (j0 + l < width) row[j0 + l] = sum;
        } else {
            float total = sum;
            if (l < BR - 1) {
                const int64_t slot = held.slot[t];
                if (slot == j0 + l) total = held.sum[t] + sum;
                else if (slot >= 0 && slot < width) row[slot] = held.sum[t];
                held.sum[t] = flex_tile_line_sum<BR, BC>(line, tile, l + BC);
                held.slot[t] = j0 + BC + l;
            }
            if (j0 + l < width) row[j0 + l] = total;
        }
    });
}

/* After the block's last tile of flex_store_tile_sums(): each thread's held sum stored at its slot (a row's at the
 * row's, a diagonal's at the slot flex_store_tile_sums() gave it). Called by every thread of the block; its barrier
 * orders the stores after the clearing of the partials when the block visited no tile. */
template <int MOD, int BR, int BC>
__device__ __forceinline__ void flex_flush_lines(const ladder_flex_hooks &f, float *tiles, int64_t Hq, int64_t b,
                                                 int64_t h, int64_t qt) {
    if (!flex_asked_reads(f)) return;
    __syncthreads();
    const flex_held<BR, BC> held(f, tiles);
    const int t = threadIdx.x;
    flex_for_own_line<MOD, BR, BC>(f, [&](int rd, ladder_flex_line line, int l) {
        float *row = flex_partials<BR>(f, rd, line, Hq, b, h, qt);
        const int64_t width = ladder_flex_partial_width(line, f.env.Sk, BR);
        if (line == LADDER_FLEX_ROW) row[l] = held.sum[t];
        else if (line == LADDER_FLEX_DIAGONAL && l < BR - 1 && held.slot[t] >= 0 && held.slot[t] < width)
            row[held.slot[t]] = held.sum[t];
    });
}

/* ---- 2. plane and 3. scatter: after the backward ---------------------------------------------------------------- */

/*
 * 2. One thread per (head h, line n) of kind LINE: the partials of line n ([B, Hq, Tq, width], query tiles of @p BR
 * rows), batch rows outer and query tiles in order, each at its slot of the line (none where the tile's rows miss
 * it), summed into lines[h * N + n]. In double: the shares cancel (a row's dS sums to zero), as the cpu and naive
 * rungs sum them. Neighbouring threads take neighbouring lines, whose slots neighbour in every row: coalesced.
 * @p mirror: the partials are the transposed plane's (a pass that walks query tiles inside a key tile: rows of
 * partials per key tile, read here with Sq and Sk swapped, rows and columns swapped and BR its key tile), where the
 * diagonal j - i is i - j, so line n is read at N - 1 - n.
 */
template <ladder_flex_line LINE>
__global__ void ladder_flex_line_sum_kernel(const float *part, int64_t B, int64_t Hq, int64_t Sq, int64_t Sk, int BR,
                                            int64_t N, bool mirror, float *lines) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= Hq * N) return;
    const int64_t h = t / N, n = t % N, Tq = (Sq + BR - 1) / BR, width = ladder_flex_partial_width(LINE, Sk, BR);
    const int64_t m = mirror && LINE == LADDER_FLEX_DIAGONAL ? N - 1 - n : n; /* the line in the partials' plane */
    double acc = 0.0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t qt = 0; qt < Tq; qt++) {
            const int64_t slot = ladder_flex_partial_slot(LINE, m, qt, BR, Sq);
            if (slot >= 0 && slot < width) acc += part[((b * Hq + h) * Tq + qt) * width + slot];
        }
    lines[t] = (float)acc;
}

/* The element of the gradient that read @p r of score mod MOD takes on line @p n of kind @p line, head @p h (asked of
 * the mod at the line's first position; the buffer derivative is already in the line sums, so s = 0 is as good as
 * any). */
template <int MOD>
__device__ __forceinline__ int64_t flex_line_element(ladder_flex_line line, int64_t n, const ladder_flex_env &env,
                                                     int64_t h, int r) {
    int64_t i, j;
    ladder_flex_line_first(line, n, env.Sq, &i, &j);
    return ladder_flex_score_grad(MOD, 0.0f, &env, 0, h, i, j).at[r];
}

/*
 * 3. scatter. The lines that read one element are a run of consecutive lines (true of every registered read:
 * tests/test_flex.c checks it), so each element's sum is its run's, in two kernels, each sum in a fixed order:
 *   a. chunks: a block per head and chunk of FLEX_RUN_CHUNK lines; the first line of each piece of a run inside the
 *      chunk adds that piece's sums (from shared memory, four at a time) and stores the total over the piece's first
 *      sum in @p lines;
 *   b. runs: the thread of each run's first line adds its pieces, one per chunk the run crosses (each starts the
 *      chunk after the first), and adds the total into the element of @p grad.
 * No thread walks more than a chunk's lines or a run's chunks (one thread walking a head's lines, each add waiting
 * for the one before, took milliseconds; one thread walking alibi's run of every line still took one).
 */
constexpr int FLEX_RUN_CHUNK = 256;

template <int MOD>
__global__ void __launch_bounds__(FLEX_RUN_CHUNK) ladder_flex_chunk_runs_kernel(float *lines, ladder_flex_line line,
                                                                               int64_t N, ladder_flex_env env, int r) {
    __shared__ float sum[FLEX_RUN_CHUNK];
    __shared__ int64_t at[FLEX_RUN_CHUNK];
    const int u = threadIdx.x;
    const int64_t h = blockIdx.y, n = (int64_t)blockIdx.x * FLEX_RUN_CHUNK + u;
    if (n < N) sum[u] = lines[h * N + n], at[u] = flex_line_element<MOD>(line, n, env, h, r);
    __syncthreads();
    if (n >= N || (u > 0 && at[u - 1] == at[u])) return; /* past the lines, or not a piece's first line */
    const int64_t left = N - (int64_t)blockIdx.x * FLEX_RUN_CHUNK;  /* lines from the chunk's first on */
    const int end = left < FLEX_RUN_CHUNK ? (int)left : FLEX_RUN_CHUNK; /* the chunk's lines */
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f; /* four adds in flight, one fixed order */
    int m = u;
    for (; m + 4 <= end && at[m + 3] == at[u]; m += 4) s0 += sum[m], s1 += sum[m + 1], s2 += sum[m + 2], s3 += sum[m + 3];
    for (; m < end && at[m] == at[u]; m++) s0 += sum[m];
    lines[h * N + n] = (s0 + s1) + (s2 + s3);
}

template <int MOD>
__global__ void ladder_flex_line_scatter_kernel(const float *lines, int64_t Hq, ladder_flex_line line, int64_t N,
                                                ladder_flex_env env, int r, float *grad) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= Hq * N) return;
    const int64_t h = t / N, n = t % N, x = flex_line_element<MOD>(line, n, env, h, r);
    if (n > 0 && flex_line_element<MOD>(line, n - 1, env, h, r) == x) return; /* not the run's first line */
    float total = lines[t];
    for (int64_t m = (n / FLEX_RUN_CHUNK + 1) * FLEX_RUN_CHUNK; m < N && flex_line_element<MOD>(line, m, env, h, r) == x;
         m += FLEX_RUN_CHUNK)
        total += lines[h * N + m];
    grad[x] += total;
}

/*
 * One gradient element per head from shares summed by a pass: head h's is the sum over the batch rows b of the @p n
 * shares at @p shares + (b Hq + h) n, into @p out[h]. A warp per head, each lane adding every 32nd share in order and
 * the lanes' sums meeting in a fixed tree: the same bits at every run. (The tensor-core rung's Hopper pass leaves
 * alibi's slopes gradient so: a share for each consumer warp of each key tile.)
 */
template <class F>
__global__ void __launch_bounds__(32) ladder_flex_head_sums_kernel(const F *shares, int64_t B, int64_t Hq, int64_t n,
                                                                  F *out) {
    static_assert(std::is_same<F, float>::value, "a template only so that headers may define it: f32 shares");
    const int64_t h = blockIdx.x;
    F sum = 0.0f;
    for (int64_t b = 0; b < B; b++)
        for (int64_t x = threadIdx.x; x < n; x += 32) sum += shares[(b * Hq + h) * n + x];
#pragma unroll
    for (int m = 16; m > 0; m /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);
    if (threadIdx.x == 0) out[h] = sum;
}

/* Step 2 for one read of kind @p line: its partials @p part (rows per query tile of @p BR rows, of the plane Sq x Sk;
 * @p mirror: ladder_flex_line_sum_kernel's, the caller passing the transposed kind and sizes) summed into @p lines,
 * Hq rows of ladder_flex_lines(line, Sq, Sk) (as many as the untransposed plane has of its kind). */
inline ladder_status ladder_flex_line_sums(ladder_flex_line line, const float *part, int64_t B, int64_t Hq, int64_t Sq,
                                           int64_t Sk, int BR, bool mirror, float *lines) {
    const int64_t N = ladder_flex_lines(line, Sq, Sk);
    const unsigned blocks = ladder_blocks(Hq * N, 256);
    if (line == LADDER_FLEX_DIAGONAL)
        ladder_flex_line_sum_kernel<LADDER_FLEX_DIAGONAL><<<blocks, 256>>>(part, B, Hq, Sq, Sk, BR, N, mirror, lines);
    else if (line == LADDER_FLEX_ROW)
        ladder_flex_line_sum_kernel<LADDER_FLEX_ROW><<<blocks, 256>>>(part, B, Hq, Sq, Sk, BR, N, mirror, lines);
    else
        ladder_flex_line_sum_kernel<LADDER_FLEX_COLUMN><<<blocks, 256>>>(part, B, Hq, Sq, Sk, BR, N, mirror, lines);
    LADDER_LAUNCH_CHECK("ladder_flex_line_sum_kernel");
    return LADDER_OK;
}

/**
 * Run @p bwd (the family's backward, reading the hooks @p k) so that every buffer gradient of @p a that is asked for
 * is written: each read r whose buffer's gradient is asked gets its partials (k.part[r], a row per query tile of
 * @p BR rows, the rung's dQ pass's tiles: that pass clears and fills them), then each such gradient is cleared and
 * each of its reads, in order, summed into it (a buffer read twice gets both reads' sums, the first one's first). The
 * gradients of buffers no mod reads are 0. @p bwd is called with a flag it sets where the tensor-core rung's Hopper
 * pass ran, which leaves each read's partials summed further, into their first floats: alibi's gradient per head (Hq
 * floats), another mod's line sums (step 2's result, Hq rows of lines).
 */
template <int MOD, class Bwd>
ladder_status ladder_flex_bwd_with_dbuf(const ladder_flex_problem *p, const ladder_flex_args *a, ladder_flex_hooks &k,
                                        int BR, Bwd bwd) {
    const ladder_attention_problem *t = &p->attn;
    const ladder_flex_score_spec *spec = &ladder_flex_score_mods[MOD];
    ladder_scratch part[LADDER_FLEX_MAX_READS], lines[LADDER_FLEX_MAX_READS];
    const ladder_tensor *grad[LADDER_FLEX_MAX_READS] = {};
    for (int r = 0; r < spec->n_reads; r++) {
        const ladder_tensor *g = (const ladder_tensor *)((const char *)a + ladder_flex_buffer(spec->reads[r])->grad);
        if (!g->data) continue;
        grad[r] = g;
        const int64_t numel = ladder_flex_partial_numel(ladder_flex_read_line(MOD, r), t->B, t->Hq, t->Sq, t->Sk, BR);
        LADDER_TRY(part[r].alloc(sizeof(float) * (size_t)numel));
        k.part[r] = (float *)part[r].ptr;
    }
    bool hopper = false;
    LADDER_TRY(bwd(&hopper));
    for (int i = 0; i < ladder_flex_n_buffers; i++) { /* every float gradient asked for starts at 0 */
        const ladder_flex_buffer_spec *s = &ladder_flex_buffers[i];
        const ladder_tensor *g = s->grad ? (const ladder_tensor *)((const char *)a + s->grad) : nullptr;
        if (g && g->data) LADDER_CUDA_TRY(cudaMemsetAsync(g->data, 0, sizeof(float) * (size_t)ladder_tensor_numel(g), 0));
    }
    for (int r = 0; r < spec->n_reads; r++) {
        if (!grad[r]) continue;
        if (hopper && MOD == LADDER_FLEX_ALIBI) { /* a gradient of Hq floats (alibi's slopes), summed */
            LADDER_CUDA_TRY(cudaMemcpyAsync(grad[r]->data, part[r].ptr, sizeof(float) * (size_t)t->Hq,
                                            cudaMemcpyDeviceToDevice, 0));
            continue;
        }
        const ladder_flex_line line = ladder_flex_read_line(MOD, r);
        const int64_t N = ladder_flex_lines(line, t->Sq, t->Sk);
        float *sums = (float *)part[r].ptr; /* the Hopper pass left the line sums there */
        if (!hopper) {
            LADDER_TRY(lines[r].alloc(sizeof(float) * (size_t)(t->Hq * N)));
            sums = (float *)lines[r].ptr;
            LADDER_TRY(ladder_flex_line_sums(line, (const float *)part[r].ptr, t->B, t->Hq, t->Sq, t->Sk, BR, false,
                                             sums));
        }
        const unsigned blocks = ladder_blocks(t->Hq * N, 256);
        const dim3 chunks((unsigned)((N + FLEX_RUN_CHUNK - 1) / FLEX_RUN_CHUNK), (unsigned)t->Hq);
        ladder_flex_chunk_runs_kernel<MOD><<<chunks, FLEX_RUN_CHUNK>>>(sums, line, N, k.env, r);
        LADDER_LAUNCH_CHECK("ladder_flex_chunk_runs_kernel");
        ladder_flex_line_scatter_kernel<MOD><<<blocks, 256>>>(sums, t->Hq, line, N, k.env, r,
                                                              (float *)grad[r]->data);
        LADDER_LAUNCH_CHECK("ladder_flex_line_scatter_kernel");
    }
    return LADDER_OK;
}

#endif
