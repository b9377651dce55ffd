/*
 * gpu_tensorcore/attention_tc_hopper_bwd.cuh: the dK/dV pass of the backward, with dQ's adds, on Hopper's
 * warpgroup matrix instructions (sm_90a files only), for every policy of the family: the plain one (flash, and
 * memeff without hooks) and the hooked one (memeff's bias, its gradient and dropout), instantiated by
 * attention_bwd.sm90a.cu, and flex's, every score mod, by attention_flex_bwd_d*.sm90a.cu. The rest of the backward
 * (the Delta preprocess, the rounding of dQ's accumulator) is the mma.sync one (attention_tc_bwd.cuh, whose
 * bwd_launch calls bwd_wgmma_dkdv() or bwd_wgmma_flex() here first).
 *
 * What changed since the mma.sync dK/dV pass, the forward's idea 3 applied to its loop:
 *   - A block is three warpgroups: a producer that copies and adds dQ (setmaxnreg 24; 32 with the hooks, 40 with
 *     flex's policy, 56 where its line tile's terms read several buffer elements) and two consumers that multiply
 *     (240; 232 with either, 224 beside such a tile). The block owns BC = 128 keys of one key/value head, 64 for each consumer, and walks the query
 *     tiles of the heads of its group as before (kv_steps: the same steps, masked where they were).
 *   - The producer's thread 0 copies K and V once and then, per step, Q and dO into a ring of two stages by TMA
 *     (128-byte swizzled panels), counting their bytes on the stage's mbarrier; its warp's 32 lanes put the step's
 *     lse (times log2 e, +inf past the rows and for fully masked rows), Delta and what the step is (its rows, whether
 *     it is masked) into the stage beside them with ordinary stores, which two named barriers a stage order: the
 *     warp arrives on "full" once they are in, and it meets the consumers on "free" (a rendezvous: both sides wait)
 *     once they are done with the stage (Q and dO too), before it fills the stage again. (racecheck takes no
 *     mbarrier, nor a bar.arrive, as an order of a load before a later store: docs/results/sanitizers.md.)
 *   - The products are the transposes of the mma.sync pass's (FlashAttention-3's arrangement, its SdP_swapAB and
 *     dKV RS): each consumer computes S^T = K Q^T and dP^T = V dO^T for its 64 keys (m64, keys as rows), so that P^T
 *     and dS^T are born in registers in the A-fragment layout, and dV += P^T dO and dK += dS^T Q take them from
 *     there (the RS form), with dO and Q read MN-major from their tiles: no P or dS tile in shared memory for them.
 *   - dQ = dS K needs all 128 keys of a query row: each consumer writes its dS^T into a core-matrix tile of shared
 *     memory (two, one per stage), the two consumers meet at a named barrier, and each multiplies its part of the
 *     output (with 64 rows a step, every row and its half of the columns; with 128, at a head dim of 64 without
 *     hooks, its 64 rows) with dS as an MN-major A (the transpose flag of A) and K as an MN-major B.
 *   - The consumers put the step's dQ into an fp32 tile of shared memory, and the producer warpgroup's warp 1, the
 *     dQ writer, adds the tile into dQ's fp32 accumulator with the copy engine's bulk reductions (write_dq()), while
 *     the consumers go on to the next step.
 *   - In deterministic mode the writer's adds into a query tile's dQ take turns, in one order at every run: the key
 *     tiles from the last that the tile sees down to the first (for a causal mask, the diagonal's first: each
 *     block's first step is then its turn at once), waiting for its turn on a counter per tile (common/tma.cuh;
 *     the counter of the tile's first row, one per row of dQ, so that packed sequences' tiles have their own),
 *     and the blocks launch in that order (the key tiles last to first, owned_block()), so that a block only waits
 *     on blocks that started before it.
 * The element rule is the mma.sync pass's: P = exp2(x sl2 - lse log2 e), dS = P (dP - Delta), times the softcap's
 * slope when capped; masked steps test each element against the row's key interval (seen from the key tile as an
 * offset from the diagonal, window_left and right, and the keys past the sequence's end).
 *
 * With the hooked policy (p_and_ds_transposed_hooked()): the producer copies the step's bias tile by TMA with Q and
 * dO (two 64-key panels, one a consumer, in the 128-byte swizzle; the next step's is fetched into L2 meanwhile, TMA's
 * prefetch), and a consumer reads its elements from there; each
 * consumer warp draws dropout's bits for its 16 keys before the step's products (kept_part(): one Philox block a
 * lane, traded by shuffles); and dS before the softcap's slope, the bias's gradient, replaces the bias in the tile,
 * from where the warp stores its rows 16 bytes at a time (sink_part()) while dV's and dK's products run. A step has
 * 64 query rows at both head dims.
 *
 * With flex's policy (p_and_ds_transposed_flex()): the steps are the query tiles of the key tile's block lists (the
 * transposed ones, as the mma.sync pass walks them), S is the score mod of s = scale q.k and the stored dS' is dS
 * times the mod's slope, and a partial tile's elements that the mask mods forbid are found before the products
 * (seen_part()); dQ's adds always take turns, and a tile's turn order is its own key list's, last to first
 * (flex_turn(), counted by the writer once for the two steps of a block-mask tile). A step has 64 query rows at both
 * head dims. At a head dim of 128, where dK and dV hold 128 registers a consumer thread, an additive mod's terms
 * (S = s + a term of the positions and buffers) come from shared memory, one float for each line of the plane that
 * the step crosses (its diagonals, or its rows and columns: the term lives on them), which the producer's idle warps
 * 2 and 3 fill a step ahead (write_terms()): read by the consumers themselves, the buffers spilled. A mod that reads
 * a buffer and is not additive keeps the mma.sync passes at 128 (flex_mod_on_hopper()), as does every mod where a
 * buffer's gradient is asked (the mma.sync dQ pass sums the shares)
 * but alibi, whose slopes' gradient the consumers sum per head (store_slopes()), and at a head dim of 128 the other
 * additive mods, whose dS' the consumers sum along the lines of the buffers' elements, each warp its own by shuffles
 * and then the warps' together while dQ's product runs (warp_line_sums(), block_line_sums()).
 *
 * Preconditions (bwd_wgmma_dkdv() checks them and launches nothing where one fails): an sm_90
 * device and LADDER_TC_PATH asking for the Hopper kernels (use_wgmma()); D and Dv run at (64, 64) or (128, 128); D a
 * multiple of 4 (dQ's rows whole 16-byte pieces, for the bulk reductions); packed sequences with the plain policy
 * only (atomic or deterministic dQ); q, k, v and dO with
 * inner stride 1 and the other strides multiples of 16 bytes (TMA); with the hooks, a bias TMA can describe (broadcast
 * over batch rows and heads at most), its gradient in its own storage with 16-byte aligned rows (not the fp32
 * scratch of a broadcast bias's gradient), and dropout's draws starting on multiples of four (Sk and the offset);
 * with flex's, deterministic mode and no buffer's gradient asked but alibi's slopes' and, at a head dim of 128, the
 * other additive mods'.
 */
#ifndef LADDER_GPU_TENSORCORE_ATTENTION_TC_HOPPER_BWD_CUH
#define LADDER_GPU_TENSORCORE_ATTENTION_TC_HOPPER_BWD_CUH

#include <limits.h>

#include <type_traits>

#include "attention_tc_bwd.cuh"
#include "attention_tc_hopper.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

namespace attn_tc {
namespace {

/* What the producer tells the consumers and the dQ writer about a step: its rows' first row in lse (and dQ's
 * accumulator), its first row along the sequence, how many rows are real, whether the step is a masked one (and,
 * flex, a partial tile's, which the mask mods decide), its query head (the writer finds the tile's turn counter and
 * this block's turn at it from these). */
struct stage_info {
    int64_t row0;
    int i0, rows, masked, mods, h;
};

/* Does policy Pol's line tile read more than one buffer element a line (t5_bias's buckets, bias_qk's two buffers)? */
template <class Pol> __host__ __device__ constexpr bool wide_terms() {
    if constexpr (Pol::FLEX) return Pol::MOD == LADDER_FLEX_T5_BIAS || Pol::MOD == LADDER_FLEX_BIAS_QK;
    else return false;
}

template <class Pol, int HD> struct ws_bwd_cfg {
    static constexpr int CONSUMERS = 2, THREADS = 128 * (CONSUMERS + 1);
    static constexpr int BC = 64 * CONSUMERS; /* keys per block: 64 per consumer (the rows of its products) */
    /* query rows per step: S^T is m64 n{BR}, 32 or 64 registers; 64 with the hooks and flex's mods, whose
     * per-element work needs registers beside S^T and dP^T */
    static constexpr int BR = HD == 64 && !Pol::EXTRAS && !Pol::FLEX ? 128 : 64;
    static_assert(HD == 64 || HD == 128, "the products are m64n64 and m64n128");
    /* dQ's part of each consumer: with 128 rows a step, its 64 rows (QO = 64 a consumer), every column; with 64,
     * every row and its half of the columns (CO = HD / 2 a consumer) */
    static constexpr int QO = BR == 128 ? 64 : 0, CO = BR == 128 ? 0 : HD / 2, DQ_N = BR == 128 ? HD : HD / 2;
    static constexpr int STAGES = 2;
    /* the step infos' ring: the dQ writer reads a step's info after the consumers have freed its stage, and the
     * producer writes the slot again four steps later, when the writer is done with it */
    static constexpr int INFOS = 4;
    /* flex's additive mods at a head dim of 128: the step's terms by the lines they live on (write_terms()), BR + BC
     * floats a stage, which the producer's warps 2 and 3 fill while the consumers work on the step before */
    static constexpr bool TERMS = has_additive_mod<Pol>() && HD == 128;
    static constexpr int TERM_LINES = BR + BC;
    static constexpr uint32_t TERM_BYTES = TERMS ? 4 * STAGES * TERM_LINES : 0;
    /* and where their buffers' gradients are asked (alibi's slopes but, summed in registers: store_slopes()), each
     * consumer warp's line sums of the step, for each read (warp_line_sums()): 80 floats a warp (a diagonal read's
     * 79 lines through the warp's 16 keys, a row read's 64 rows), which the consumers add up across the warps
     * (block_line_sums()) */
    static constexpr bool SUMS = TERMS && !is_alibi<Pol>();
    static constexpr int SUM_STRIDE = 80;
    static constexpr uint32_t SUM_BYTES = SUMS ? 4 * LADDER_FLEX_MAX_READS * 4 * CONSUMERS * SUM_STRIDE : 0;
    static_assert(!SUMS || BR == 64, "warp_line_sums() takes steps of 64 rows");
    /* as the forward's: 2 * 128 * 240 + 128 * 24 = 64512, the registers the launch gives the block (168 a thread),
     * which is all that setmaxnreg.inc can take (more, and a consumer waits for registers forever); with the
     * hooks the producer keeps 32 (its bias copies spilled in 24) and the consumers take 232, and so with flex's
     * policy (its producer walks the block lists), but where the line tile's terms read more than one buffer
     * element a line (t5_bias's buckets, bias_qk's two buffers): there the producer keeps 56 (t5_bias's terms
     * spilled in 40) and the consumers take 224 */
    static constexpr bool WIDE_TERMS = TERMS && wide_terms<Pol>();
    static constexpr int PRODUCER_REGS = WIDE_TERMS ? 56 : Pol::FLEX ? 40 : Pol::EXTRAS ? 32 : 24,
                         CONSUMER_REGS = WIDE_TERMS ? 224 : Pol::FLEX || Pol::EXTRAS ? 232 : 240;
    static_assert(128 * (CONSUMERS * CONSUMER_REGS + PRODUCER_REGS) <= THREADS * (65536 / THREADS / 8 * 8),
                  "the warpgroups take no more registers than the launch gives the block");
    /* named barriers (0 is __syncthreads()'s): the consumers' dS^T tiles; per stage "full" and "free" between the
     * producer's warp 0 and the consumers, for what that warp stores into the stage itself; "dQ full" and "dQ free"
     * between the consumers and the dQ writer, for the dQ tile. BAR_THREADS meet at each but DS_BAR: a warp of the
     * producer warpgroup and the consumers; at "free", with the line tile, its two warps too (FREE_THREADS) */
    static constexpr int DS_BAR = 1, FULL_BAR = 2, FREE_BAR = 2 + STAGES, DQ_FULL_BAR = 2 + 2 * STAGES,
                         DQ_FREE_BAR = DQ_FULL_BAR + 1, BAR_THREADS = 32 + 128 * CONSUMERS,
                         FREE_THREADS = BAR_THREADS + (TERMS ? 64 : 0);
    /* a row of the dQ tile in floats: HD, unpadded, so that where D is HD a step's rows lie in one run as they do
     * in dQ's accumulator, and one bulk reduction adds them all (the consumers' column pairs then meet 4-way bank
     * conflicts, which cost less than a reduction per row) */
    static constexpr int DQ_STRIDE = HD;
    /* the line tile's named barriers, per stage: "full" (the step's terms are in: the producer's warps 2 and 3
     * arrive, the consumers wait); the stage's "free" frees it too */
    static constexpr int TERM_FULL_BAR = DQ_FREE_BAR + 1, TERM_THREADS = 64 + 128 * CONSUMERS;
    /* the hooks' bias tile of a stage: the step's BR queries by the block's keys, two panels of 64 keys (a
     * consumer's) in the 128-byte swizzle, copied by TMA with Q and dO */
    static constexpr uint32_t BIAS_BYTES = Pol::EXTRAS ? 2 * BR * BC : 0;
    static constexpr uint32_t K_BYTES = 2 * BC * HD, Q_BYTES = 2 * BR * HD, DS_BYTES = 2 * BC * BR;
    /* byte offsets from the 1024-byte aligned base: K, V; per stage Q, dO (128-byte swizzled panels), dS^T (a
     * core-matrix tile), the bias tile; per stage lse, Delta; dQ's fp32 tile; the line tile; the warps' line sums;
     * the steps' infos; the mbarriers: K and V's "full", each stage's "full" (the bytes of its Q and dO) */
    static constexpr uint32_t V_AT = K_BYTES, Q_AT = 2 * K_BYTES, DO_AT = Q_AT + STAGES * Q_BYTES,
                              DS_AT = DO_AT + STAGES * Q_BYTES, BIAS_AT = DS_AT + STAGES * DS_BYTES,
                              L2_AT = BIAS_AT + STAGES * BIAS_BYTES, D_AT = L2_AT + STAGES * BR * 4,
                              DQ_AT = D_AT + STAGES * BR * 4, TERM_AT = DQ_AT + BR * DQ_STRIDE * 4,
                              SUM_AT = TERM_AT + TERM_BYTES, INFO_AT = SUM_AT + SUM_BYTES,
                              BAR_AT = INFO_AT + INFOS * sizeof(stage_info),
                              END = BAR_AT + 8 * (1 + STAGES);
    static constexpr size_t SMEM = 1024 + END;
    static_assert(SMEM <= 227 * 1024, "the block's shared memory fits an sm_90 block's 227 KiB");
};

/*
 * Which keys of the block a query row sees, as offsets: the row's interval (ladder_attn_key_range()) is the keys j
 * with lo <= j - diag <= hi around its diagonal diag, and below the sequence's end (keys). For a step of rows from
 * i0, key c of the block and row r of the step lie at j - diag = base - i0 + c - r.
 */
struct diag_window {
    int base, lo, hi, keys;
    __device__ diag_window(const ladder_attn_mask &m, int64_t j0, int64_t Lq, int64_t Lk, int64_t keys_) {
        const int64_t off = m.causal == LADDER_CAUSAL_TOP_LEFT ? 0 : Lk - Lq; /* row i's diagonal: key i + off */
        base = (int)(j0 - off), keys = (int)keys_;
        lo = m.window_left >= 0 ? -(int)m.window_left : INT_MIN / 2;
        hi = m.causal != LADDER_CAUSAL_NONE ? 0 : INT_MAX / 2;
        if (m.window_right >= 0 && m.window_right < hi) hi = (int)m.window_right;
    }
    __device__ bool sees(int i0, int r, int c) const {
        const int d = base - i0 + c - r;
        return c < keys && d >= lo && d <= hi;
    }
};

/*
 * The element rule of p_and_ds (attention_tc_bwd.cuh) on transposed tiles: P^T and dS^T (times the softcap's slope
 * when CAPPED, x the capped S then) in place of this thread's S^T (sc) and dP^T (dp): keys k_row, k_row + 8, queries
 * 8 i + 2 t, + 1, lse log2 e and Delta in @p L2 and @p Dl. MASKED: elements outside a row's keys get P = 0.
 */
template <int BR, bool MASKED, bool CAPPED>
__device__ __forceinline__ void p_and_ds_transposed(const args &a, float (&sc)[BR / 8][4], float (&dp)[BR / 8][4],
                                                    const float *L2, const float *Dl, float sl2,
                                                    const diag_window &win, int i0, int k_row, int t) {
#pragma unroll
    for (int i = 0; i < BR / 8; i++) {
        const float2 l2 = *(const float2 *)(L2 + 8 * i + 2 * t), de = *(const float2 *)(Dl + 8 * i + 2 * t);
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int e = c & 1;
            float x = sc[i][c];
            if (CAPPED) x = ladder_attn_softcap(a.scale * x, a.softcap);
            float P = ladder_ex2_ftz(fmaf(x, sl2, -(e ? l2.y : l2.x)));
            if (MASKED && !win.sees(i0, 8 * i + 2 * t + e, k_row + 8 * (c / 2))) P = 0.0f;
            float dS = P * (dp[i][c] - (e ? de.y : de.x));
            if (CAPPED) dS *= ladder_attn_softcap_grad(x, a.softcap);
            sc[i][c] = P, dp[i][c] = dS;
        }
    }
}

/*
 * flex, a masked step: which of this thread's elements (p_and_ds_transposed's: keys k_row, k_row + 8 of the block,
 * queries 8 i + 2 t, + 1 of the step) are seen, as bit 4 i + c: inside the step's rows and the block's keys and, in a
 * partial tile (@p mods), allowed by the mask mods. A query r of the step is position q0 + r along Sq, a key c of the
 * block k0 + c along Sk, of head h and batch row b. Found one element at a time before the step's products, while
 * S^T and dP^T hold no registers: beside them, the mask mods of every element at once spilled.
 */
template <int BR>
__device__ __forceinline__ uint32_t seen_part(const args &a, int64_t b, int64_t h, int q0, int rows, int k0, int keys,
                                              bool mods, int k_row, int t) {
    static_assert(BR <= 64, "a thread's bits fit one word");
    uint32_t seen = 0;
#pragma unroll 1
    for (int x = 0; x < BR / 2; x++) {
        const int r = 8 * (x / 4) + 2 * t + (x & 1), key = k_row + 8 * ((x % 4) / 2);
        const bool in = r < rows && key < keys &&
                        (!mods || ladder_flex_masks(a.flex.masks, &a.flex.env, b, h, q0 + r, k0 + key));
        seen |= (uint32_t)in << x;
    }
    return seen;
}

/*
 * The lines an additive mod's term lives on: those of its buffer reads (common/flex_lines.h), as the term is their
 * sum: a diagonal j - i (alibi, rel_bias, t5_bias), or a row i plus a column j (bias_qk: bq[h, i] + bk[h, j]), whose
 * first read is a row's. A step of BR rows by the block's BC keys crosses BR + BC - 1
 * diagonals, or BR rows and BC columns, so its terms are BR + BC floats, not BR x BC (the line tile, @p Ts):
 *   - diagonal: line x = c - r + BR - 1 for key c of the block and row r of the step, and term(r, c) = Ts[x];
 *   - rows and columns: Ts[r] = term(r, 0) for the rows, Ts[BR + c] = term(0, c) - term(0, 0) for the columns, and
 *     term(r, c) = Ts[r] + Ts[BR + c].
 */
template <int MOD> __device__ __forceinline__ bool diagonal_terms() {
    return ladder_flex_read_line(MOD, 0) == LADDER_FLEX_DIAGONAL;
}

/* The plane's lines with its rows and columns swapped: a pass that walks the query tiles inside a key tile keeps the
 * partials of the transposed plane (common/flex_gpu.cuh's step 2 reads them mirrored). */
__host__ __device__ constexpr ladder_flex_line transposed_line(ladder_flex_line line) {
    return line == LADDER_FLEX_ROW ? LADDER_FLEX_COLUMN : line == LADDER_FLEX_COLUMN ? LADDER_FLEX_ROW : line;
}

/* @p x added, by a reduction (red), into slot @p slot of the partials of read @p rd, a line of kind @p line: a row per
 * (batch row @p b, head @p h, key tile @p kt of BC keys), the transposed plane's layout (transposed_line()) */
template <int BC>
__device__ __forceinline__ void add_line_sum(const args &a, int rd, ladder_flex_line line, int64_t b, int64_t h,
                                             int64_t kt, int64_t slot, float x) {
    const int64_t width = ladder_flex_partial_width(transposed_line(line), a.flex.env.Sq, BC);
    if (slot < width) atomic_add1(&a.flex.part[rd][((b * a.Hq + h) * gridDim.x + kt) * width + slot], x);
}

/*
 * One consumer warp's sums of the step's dS' (p_and_ds_transposed_flex()'s, in @p dp: keys k_row and k_row + 8,
 * queries 8 i + 2 t and + 1) along the lines of each read whose gradient is asked (the additive mods' terms have slope
 * 1 in their buffers, so dS' is each element's share of its buffer elements' gradients), by shuffles within the
 * warp. A thread's element (key g + 8 k of the warp's 16, query 8 i + 2 t + e) lies on
 *   - diagonal m = 63 + (g - 2 t - e) + 8 (k - i) of the warp's 79 (the block's line 16 W + m, for warp W): the
 *     thread first adds its elements of equal k - i, then three shuffles a register move the sums of lanes whose
 *     g - 2 t - e differ by 1, 2 and 4 onto one lane (each a lane of g one, two or four on, whose registers of
 *     k - i one on where g wraps past 7), leaving diagonal g - 1 + 8 j in register j of the lanes of t = 0, which
 *     store them at @p Ws (a row of SUM_STRIDE floats for warp W, per read);
 *   - row 8 i + 2 t + e: summed over the thread's two keys, then over the eight lanes of its t by halving exchanges
 *     (each lane keeps half of its sums and sends the other half), leaving rows 8 g + 2 t and + 1, stored as well;
 *   - column g + 8 k: summed over the thread's queries and the four lanes of its g, and added by lane t = 0 into
 *     its slot of the partials itself, at every step the same thread.
 * The rows and diagonals of the warps are added up by block_line_sums(). The same order at every run.
 */
template <int MOD, class C>
__device__ __forceinline__ void warp_line_sums(const args &a, float *Ws, const float (&dp)[8][4], int W, int lane,
                                               int64_t b, int64_t h, int64_t kt, int k_row) {
    constexpr unsigned ALL = 0xffffffffu;
    constexpr int WARPS = 4 * C::CONSUMERS, STRIDE = C::SUM_STRIDE;
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++) {
        const ladder_flex_line line = ladder_flex_read_line(MOD, rd);
        if (!a.flex.part[rd]) continue;
        float *row = Ws + (rd * WARPS + W) * STRIDE;
        if (line == LADDER_FLEX_DIAGONAL) {
            float s0[10], s1[10]; /* register j: k - i = j - 8, for e = 0 and 1 */
#pragma unroll
            for (int j = 0; j < 10; j++) s0[j] = s1[j] = 0.0f;
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int k = 0; k < 2; k++) s0[k - i + 8] += dp[i][2 * k], s1[k - i + 8] += dp[i][2 * k + 1];
            /* e = 1 of the lane of g + 1 onto e = 0; then t + 1 onto t, g + 2 on; then t + 2 onto t, g + 4 on */
#pragma unroll
            for (int j = 0; j < 10; j++) {
                const float y = g == 0 ? (j < 9 ? s1[j + 1] : 0.0f) : s1[j];
                s0[j] += __shfl_sync(ALL, y, (lane + 4) & 31);
            }
#pragma unroll
            for (int j = 0; j < 10; j++) {
                const float y = g < 2 ? (j < 9 ? s0[j + 1] : 0.0f) : s0[j];
                s1[j] = __shfl_sync(ALL, y, (4 * ((g + 2) & 7) + t + 1) & 31);
            }
#pragma unroll
            for (int j = 0; j < 10; j++) s0[j] += s1[j];
#pragma unroll
            for (int j = 0; j < 10; j++) {
                const float y = g < 4 ? (j < 9 ? s0[j + 1] : 0.0f) : s0[j];
                s0[j] += __shfl_sync(ALL, y, (4 * ((g + 4) & 7) + t + 2) & 31);
            }
            if (t == 0) {
#pragma unroll
                for (int j = 0; j < 10; j++)
                    if (g - 1 + 8 * j >= 0 && g - 1 + 8 * j < 79) row[g - 1 + 8 * j] = s0[j];
            }
        } else if (line == LADDER_FLEX_ROW) {
            float v[16]; /* query 8 i + 2 t + e at 2 i + e */
#pragma unroll
            for (int i = 0; i < 8; i++) v[2 * i] = dp[i][0] + dp[i][2], v[2 * i + 1] = dp[i][1] + dp[i][3];
            auto halve = [&](auto H) { /* lane bit 2 H (g's bit log2 H - 1): keep half of the sums, send half */
                constexpr int half = decltype(H)::value;
                const bool up = lane & (2 * half);
#pragma unroll
                for (int j = 0; j < half; j++) {
                    const float lo = v[j], hi = v[j + half];
                    v[j] = (up ? hi : lo) + __shfl_xor_sync(ALL, up ? lo : hi, 2 * half);
                }
            };
            halve(std::integral_constant<int, 8>{});
            halve(std::integral_constant<int, 4>{});
            halve(std::integral_constant<int, 2>{});
            *(float2 *)(row + 8 * g + 2 * t) = make_float2(v[0], v[1]);
        } else {
#pragma unroll
            for (int k = 0; k < 2; k++) {
                float v = 0.0f;
#pragma unroll
                for (int i = 0; i < 8; i++) v += dp[i][2 * k] + dp[i][2 * k + 1];
                v += __shfl_xor_sync(ALL, v, 1);
                v += __shfl_xor_sync(ALL, v, 2);
                if (t == 0) add_line_sum<C::BC>(a, rd, line, b, h, kt, k_row + 8 * k, v);
            }
        }
    }
}

/*
 * The step's line sums, once every consumer warp's are in (warp_line_sums(), a barrier between): consumer thread
 * @p u (0 .. 255) adds up one line of one read whose gradient is asked (the reads' lines one after another: the
 * step's 191 diagonals, or its 64 rows; the columns are the warps' own) over the warps that hold it, in order, and
 * adds the sum into its slot of the read's partials (0 before the pass): slot i - j + j0 + BC - 1 of a diagonal, i of
 * a row. The add is a reduction in memory (red), which the thread does not wait for. A row's slot is added to once (a
 * step's rows are its own), a diagonal's by the same thread at every step: the steps' 191 diagonals overlap, so the
 * thread of a diagonal is picked by its slot (slot mod 191), not by its place in the step. One thread's adds to one
 * address land in its program's order: the same bits at every run.
 */
template <class Pol, class C>
__device__ __forceinline__ void block_line_sums(const args &a, const float *Ws, int64_t b, int64_t h, int64_t i0,
                                                int64_t kt, int u) {
    constexpr int BR = C::BR, BC = C::BC, WARPS = 4 * C::CONSUMERS, STRIDE = C::SUM_STRIDE;
    int v = u; /* the thread's place among the read's lines */
#pragma unroll
    for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++) {
        const ladder_flex_line line = ladder_flex_read_line(Pol::MOD, rd);
        if (line == LADDER_FLEX_COLUMN) continue;
        const int n = ladder_flex_tile_lines(line, BR, BC);
        if (a.flex.part[rd] && v >= 0 && v < n) {
            const float *rows = Ws + rd * WARPS * STRIDE;
            float sum = 0.0f;
            int64_t slot;
            if (line == LADDER_FLEX_DIAGONAL) { /* the block's diagonal l, whose slot is v mod n: warp W's 16 W + m */
                const int l = n - 1 - ((v - (int)i0) % n + n) % n; /* i0 < 2^31 */
                const int w0 = l >= 78 ? (l - 78 + 15) / 16 : 0, w1 = l / 16 < WARPS - 1 ? l / 16 : WARPS - 1;
                for (int w = w0; w <= w1; w++) sum += rows[w * STRIDE + l - 16 * w];
                slot = i0 - l + BR + BC - 2;
            } else {
                for (int w = 0; w < WARPS; w++) sum += rows[w * STRIDE + v];
                slot = i0 + v;
            }
            add_line_sum<BC>(a, rd, line, b, h, kt, slot, sum);
        }
        v -= n;
    }
}

/*
 * The producer's warps 2 and 3 (@p half 0 and 1), where the mod is additive at a head dim of 128 (ws_bwd_cfg::TERMS):
 * each step's line tile (diagonal_terms()), the term of each line asked of the mod at the line's first element in the
 * step's rows and the block's keys, clamped into them (a line that starts past them holds only masked elements, and
 * the mod would read past its buffers there); three lines a lane. The tile has a stage per stage of the ring: step n
 * fills stage n % STAGES's once the consumers are done with step n - STAGES (the stage's "free", which they meet
 * after its dQ product, with the producer's warp 0), and says so (the stage's "term full"). The steps are the
 * kernel's, walked again.
 */
template <class Pol, class C, class Steps>
__device__ __forceinline__ void write_terms(const args &a, Steps steps, float *Ts, int half, int lane, int64_t b,
                                            int64_t q_first, int64_t key0, int keys) {
    constexpr int BR = C::BR;
    const ladder_flex_env &env = a.flex.env;
    for (int n = 0; steps.more(); steps.next(a), n++) {
        const qtile q = steps.tile();
        const int st = n % C::STAGES;
        if (n >= C::STAGES) ladder_named_barrier(C::FREE_BAR + st, C::FREE_THREADS);
        const int64_t i0 = q_first + q.i0;
        float *tile = Ts + st * C::TERM_LINES;
#pragma unroll 1
        for (int x = 32 * half + lane; x < C::TERM_LINES; x += 64) {
            int r, c; /* the line's first element */
            if (diagonal_terms<Pol::MOD>()) r = x < BR - 1 ? BR - 1 - x : 0, c = x < BR - 1 ? 0 : x - (BR - 1);
            else r = x < BR ? x : 0, c = x < BR ? 0 : x - BR;
            r = r < q.rows ? r : q.rows - 1, c = c < keys ? c : keys - 1;
            float term = ladder_flex_score(Pol::MOD, 0.0f, &env, b, q.h, i0 + r, key0 + c);
            if (!diagonal_terms<Pol::MOD>() && x >= BR)
                term -= ladder_flex_score(Pol::MOD, 0.0f, &env, b, q.h, i0, key0);
            tile[x] = term;
        }
        ladder_named_barrier_arrive(C::TERM_FULL_BAR + st, C::TERM_THREADS);
    }
}

/*
 * The element rule of p_and_ds_flex (attention_tc_bwd.cuh) on transposed tiles, with flex's score mod MOD, in natural
 * units: S = MOD(s) for s = scale x, P = exp(S - lse), and dS' = P (dP - Delta) times the mod's slope dS/ds, in place
 * of this thread's S^T and dP^T (lse log2 e and Delta in @p L2 and @p Dl; positions as seen_part()'s). MASKED: the
 * elements outside @p seen (seen_part()) get P = dS' = 0, and their mod is asked at a position clamped into the tile,
 * not past it, where it would read past its buffers. With @p Ts (TERMS: an additive mod, write_terms()), S = s plus
 * the element's term from the tile, and the slope is 1. SLOPES (alibi, its slopes' gradient asked): @p slopes gains
 * the elements' shares of it, dS' (j - i), j - i as the thread's first element's plus the element's offset from there
 * (8 (c / 2) - 8 i - e: a constant of the unrolled loop).
 */
template <int MOD, int BR, bool MASKED, bool TERMS, bool SLOPES>
__device__ __forceinline__ void p_and_ds_transposed_flex(const args &a, float (&sc)[BR / 8][4], float (&dp)[BR / 8][4],
                                                         const float *L2, const float *Dl, const float *Ts, int64_t b,
                                                         int64_t h, int q0, int rows, int k0, int keys, uint32_t seen,
                                                         int k_row, int t, float &slopes) {
    const ladder_flex_hooks &f = a.flex;
    [[maybe_unused]] const float d0 = SLOPES ? (float)((k0 + k_row) - (q0 + 2 * t)) : 0.0f; /* j - i at (0, 0) */
    [[maybe_unused]] float col[2] = {0.0f, 0.0f}; /* rows and columns: the thread's two keys' column terms */
    if constexpr (TERMS) {
        if (!diagonal_terms<MOD>()) col[0] = Ts[BR + k_row], col[1] = Ts[BR + k_row + 8];
    }
#pragma unroll
    for (int i = 0; i < BR / 8; i++) {
        const float2 l2 = *(const float2 *)(L2 + 8 * i + 2 * t), de = *(const float2 *)(Dl + 8 * i + 2 * t);
        float2 term[2]; /* keys k_row and k_row + 8, queries 8 i + 2 t and + 1 (the line tile: write_terms()) */
        if constexpr (TERMS) {
            for (int k = 0; k < 2; k++) {
                if (diagonal_terms<MOD>()) {
                    const int x = k_row + 8 * k - (8 * i + 2 * t) + BR - 1;
                    term[k] = make_float2(Ts[x], Ts[x - 1]);
                } else {
                    const float2 row = *(const float2 *)(Ts + 8 * i + 2 * t);
                    term[k] = make_float2(row.x + col[k], row.y + col[k]);
                }
            }
        }
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int e = c & 1, r = 8 * i + 2 * t + e, key = k_row + 8 * (c / 2);
            float P, slope = 1.0f;
            if constexpr (TERMS) {
                const float S = fmaf(a.scale, sc[i][c], e ? term[c / 2].y : term[c / 2].x);
                P = ladder_ex2_ftz(fmaf(S, LADDER_LOG2E, -(e ? l2.y : l2.x)));
            } else if constexpr (MOD == LADDER_FLEX_SCORE_NONE) {
                /* S = x: scale and log2 e in one multiply-add, as flash's rule has them */
                P = ladder_ex2_ftz(fmaf(sc[i][c], a.scale * LADDER_LOG2E, -(e ? l2.y : l2.x)));
            } else {
                const int qi = q0 + (MASKED && r >= rows ? rows - 1 : r);
                const int kj = k0 + (MASKED && key >= keys ? keys - 1 : key);
                const float x = a.scale * sc[i][c];
                slope = ladder_flex_score_grad(MOD, x, &f.env, b, h, qi, kj).dscore;
                P = ladder_ex2_ftz(fmaf(ladder_flex_score(MOD, x, &f.env, b, h, qi, kj), LADDER_LOG2E,
                                        -(e ? l2.y : l2.x)));
            }
            if (MASKED && !((seen >> (4 * i + c)) & 1u)) P = 0.0f;
            sc[i][c] = P;
            dp[i][c] = P * (dp[i][c] - (e ? de.y : de.x)) * slope;
            if constexpr (SLOPES) slopes = fmaf(dp[i][c], d0 + (float)(8 * (c / 2) - 8 * i - e), slopes);
        }
    }
}

/*
 * flex: the turns at query tile i0 of head h (batch row b) that come before the block of key tile jt: how many key
 * tiles of the query tile's own lists (the forward's, partial and full; a key tile of the block is one of the block
 * mask's) lie past jt, counted by the warp's 32 lanes. The same order as the interval's: last to first.
 */
__device__ __forceinline__ int flex_turn(const args &a, int64_t b, int64_t h, int64_t i0, int64_t jt, int lane) {
    const flex_blocks &k = a.flex.blocks;
    const int64_t row = flex_list_row(&k, b, h, i0 / LADDER_FLEX_BLOCK, k.Tq);
    const int32_t *partial = k.kv_idx + row * k.Tk, *whole = k.full_kv_idx + row * k.Tk;
    int past = 0;
    for (int e = lane; e < k.kv_num[row]; e += 32) past += partial[e] > jt;
    for (int e = lane; e < k.full_kv_num[row]; e += 32) past += whole[e] > jt;
    return __reduce_add_sync(0xffffffffu, past);
}

/*
 * The hooks (memeff), for one consumer warp: its part of a step is the step's queries (BR of them, from position q0
 * along Sq, rows real) by the warp's 16 keys (from position key0 along Sk, keys of them real: fewer than 16, or
 * none, in a sequence's last key tile), of query head h, batch row b.
 */
struct warp_part {
    int64_t b, h, q0, key0;
    int rows, keys;
};

/*
 * The bias's gradient of a warp's part, which p_and_ds_transposed_hooked() left in the bias tile in place of the
 * bias, into @p d (storage of T, rows 16-byte aligned: the launcher checks it), 16 bytes a store, the real rows and
 * keys only: rows r of the part, keys 16 w .. 16 w + 15 of the consumer's panel @p Bp.
 */
template <int BR>
__device__ __forceinline__ void sink_part(const ladder_attn_ds_sink &d, const uint16_t *Bp, int w, const warp_part &p,
                                          int lane) {
    uint16_t *base = (uint16_t *)d.p + p.b * d.s[0] + p.h * d.s[1] + p.q0 * d.s[2] + p.key0;
    for (int x = lane; x < 2 * BR; x += 32) {
        const int r = x / 2, c = 8 * (x % 2), n = p.keys - c; /* the piece's real keys */
        if (r >= p.rows || n <= 0) continue;
        const uint16_t *src = Bp + ladder_sw128_index(r, 16 * w + c);
        uint16_t *dst = base + r * d.s[2] + c;
        if (n >= 8) *(uint4 *)dst = *(const uint4 *)src;
        else
            for (int e = 0; e < n; e++) dst[e] = src[e];
    }
}

/*
 * Dropout's kept bits of a warp's part, for this lane's elements (p_and_ds_transposed's: keys g, g + 8 of the
 * warp's 16, queries 8 i + 2 t, + 1): bit 4 i + c for element c of row block i. The 8 queries of a row block by the
 * 16 keys draw 32 Philox blocks of four consecutive outputs (the keys' counters start on a multiple of four: the
 * launcher checks it), one a lane: lane L the block of query 8 i + 2 (L % 4) + (L / 4) % 2 and keys 4 (L / 8) ..
 * + 3, and four shuffles bring each lane its own bits. Every bit is set without dropout.
 */
template <int BR>
__device__ __forceinline__ uint32_t kept_part(const ladder_attn_hooks &k, const args &a, const warp_part &w, int lane) {
    static_assert(BR <= 64, "a lane's bits fit one word");
    if (k.dropout_p <= 0.0f) return ~0u;
    const int g = lane / 4, t = lane % 4;
    uint32_t kept = 0;
#pragma unroll 1 /* unrolled, the Philox rounds of the row blocks interleave and spill */
    for (int i = 0; i < BR / 8; i++) {
        const int64_t query = w.q0 + 8 * i + 2 * (lane % 4) + (lane / 4) % 2, key = w.key0 + 4 * (lane / 8);
        const ladder_philox4 x = ladder_philox_block(k.seed, ladder_dropout_counter(k.offset, w.b, w.h, query, key,
                                                                                     a.Hq, a.Sq, a.Sk) / 4);
        uint32_t drawn = 0; /* bit u: output u of the block, kept */
#pragma unroll
        for (int u = 0; u < 4; u++) drawn |= (uint32_t)(x.w[u] >= k.keep_min) << u;
#pragma unroll
        for (int c = 0; c < 4; c++) { /* key g + 8 (c / 2): block g / 4 + 2 (c / 2); query 2 t + c % 2 */
            const int from = 8 * (g / 4 + 2 * (c / 2)) + 4 * (c % 2) + t;
            kept |= ((__shfl_sync(0xffffffffu, drawn, from) >> (g % 4)) & 1u) << (4 * i + c);
        }
    }
    return kept;
}

/*
 * p_and_ds_transposed with the hooks, as p_and_ds_hooked (attention_tc_bwd.cuh) forms them: S gains the bias (from
 * the consumer's panel @p Bp of the step's bias tile, when there is one), P is kept or dropped by the bits of
 * kept_part(); the stored P^T is P where kept and 0 where dropped (dV's 1 / (1 - p) is applied once, to the sum),
 * dS = P (dP f - Delta) with f dropout's factor, and with @p sink dS before the softcap's slope, the bias's
 * gradient, replaces the bias in the tile (sink_part() stores it). Key g of the warp's part is key k_row of the
 * block's tile and key 16 w + g of the panel.
 */
template <class T, int BR, bool MASKED, bool CAPPED>
__device__ __forceinline__ void p_and_ds_transposed_hooked(const args &a, float (&sc)[BR / 8][4],
                                                           float (&dp)[BR / 8][4], const float *L2, const float *Dl,
                                                           float sl2, const diag_window &win, int i0, int k_row,
                                                           uint16_t *Bp, bool biased, bool sink, uint32_t kept, int w,
                                                           int lane) {
    const ladder_attn_hooks &hk = a.hooks;
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < BR / 8; i++) {
        const float2 l2 = *(const float2 *)(L2 + 8 * i + 2 * t), de = *(const float2 *)(Dl + 8 * i + 2 * t);
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int e = c & 1, r = 8 * i + 2 * t + e, at = ladder_sw128_index(r, 16 * w + g + 8 * (c / 2));
            float x = sc[i][c];
            if (CAPPED) x = ladder_attn_softcap(a.scale * x, a.softcap);
            const float bias = biased ? ladder_to_float<T>(Bp[at]) : 0.0f;
            float P = ladder_ex2_ftz(fmaf(x, sl2, fmaf(bias, LADDER_LOG2E, -(e ? l2.y : l2.x))));
            if (MASKED && !win.sees(i0, r, k_row + 8 * (c / 2))) P = 0.0f;
            const bool keep = (kept >> (4 * i + c)) & 1u;
            const float sunk = P * (dp[i][c] * (keep ? hk.keep_scale : 0.0f) - (e ? de.y : de.x));
            sc[i][c] = keep ? P : 0.0f;
            dp[i][c] = CAPPED ? sunk * ladder_attn_softcap_grad(x, a.softcap) : sunk;
            if (sink) Bp[at] = ladder_from_float<T>(sunk);
        }
    }
}

/*
 * The key tile, key/value head and batch row of this block: with atomics, blockIdx's x, y and z. With ordered adds a
 * block waits on the blocks whose turns come before its own, so the blocks start in the order of their turns (the
 * order of their linear index, x fastest: tma.cuh): the key tiles last to first, and the heads (pairs of batch row
 * and key/value head) interleaved in groups of TURN_HEADS, so that the blocks that start together mostly belong to
 * different heads. The tiles of one head started together would wait on one another at every query tile, one step
 * more each; a group of a few heads keeps their Q, dO and dQ in L2 as the order without turns does.
 */
struct owned {
    int64_t tile, hk, b;
};
constexpr int64_t TURN_HEADS = 4;
__device__ __forceinline__ owned owned_block(bool ordered, int64_t Hkv) {
    if (!ordered) return {blockIdx.x, blockIdx.y, blockIdx.z};
    const int64_t tiles = gridDim.x, heads = Hkv * gridDim.z;
    const int64_t at = blockIdx.x + tiles * (blockIdx.y + Hkv * blockIdx.z); /* the launch order */
    const int64_t h0 = at / (tiles * TURN_HEADS) * TURN_HEADS;               /* the group's first head */
    const int64_t size = heads - h0 < TURN_HEADS ? heads - h0 : TURN_HEADS, within = at - h0 * tiles;
    const int64_t head = h0 + within % size;
    return {tiles - 1 - within / size, head % Hkv, head / Hkv};
}

/*
 * The dQ writer (the producer warpgroup's warp 1). At each step, once the consumers have put the step's dQ into the
 * tile (dQs), it adds the tile into dQ's accumulator with the copy engine's bulk reduction (common/tma.cuh): one
 * for the whole tile, or where D is below the head dim one per row, a row a lane; and it frees the tile as soon as
 * the engine has read it. With ordered adds (@p turns) it first waits for the block's turn at the query tile, and
 * passes the turn on once its adds are done: the consumers only ever wait for a turn when the writer is a whole step
 * behind.
 */
template <class Pol, class C>
__device__ __forceinline__ void write_dq(const args &a, int *turns, int n_steps, const stage_info *info,
                                         const float *dQs, int lane, int64_t b, const ladder_attn_seq &seq,
                                         int64_t j0) {
    /* flex: the turn flex_before, counted at row `counted` of block-mask tiles of head counted_h */
    [[maybe_unused]] int counted = -1, counted_h = -1, flex_before = 0;
    for (int n = 0; n < n_steps; n++) {
        ladder_named_barrier(C::DQ_FULL_BAR, C::BAR_THREADS); /* the consumers' dQ of step n is in */
        const stage_info &in = info[n % C::INFOS];
        int *turn = turns ? turns + in.row0 : nullptr; /* the counter of the tile's first row */
        if (turn) {
            /* the tile's turns go from the last key tile that its last row sees down to its first (flex: of its
             * lists) */
            int before;
            if constexpr (Pol::FLEX) {
                static_assert(C::BC == LADDER_FLEX_BLOCK, "a block's key tile is one of the block mask's");
                /* a block-mask tile is two steps of rows: the second step's turn is the first's */
                const int tile = in.i0 / LADDER_FLEX_BLOCK;
                if (tile != counted || in.h != counted_h) {
                    counted = tile, counted_h = in.h;
                    flex_before = flex_turn(a, b, in.h, in.i0, j0 / C::BC, lane);
                }
                before = flex_before;
            } else {
                int64_t lo, hi;
                ladder_attn_key_range(&a.mask, in.i0 + in.rows - 1, seq.Lq, seq.Lk, &lo, &hi);
                before = (int)((hi - 1 - j0) / C::BC);
            }
            if (lane == 0) ladder_turn_wait(turn, before);
            __syncwarp();
            ladder_fence_proxy_async_global(); /* the adds of the turns before, seen by ours */
        }
        if (a.D == C::DQ_STRIDE) { /* the step's rows are one run, in the tile as in the accumulator */
            if (lane == 0) ladder_bulk_reduce_add(a.dq_accum + in.row0 * a.D, dQs, (uint32_t)(4 * in.rows * a.D));
        } else {
            for (int r = lane; r < in.rows; r += 32)
                ladder_bulk_reduce_add(a.dq_accum + (in.row0 + r) * a.D, dQs + r * C::DQ_STRIDE, (uint32_t)(4 * a.D));
        }
        ladder_bulk_commit();
        ladder_bulk_wait_read();
        __syncwarp();
        if (n + 1 < n_steps) ladder_named_barrier_arrive(C::DQ_FREE_BAR, C::BAR_THREADS); /* the tile is read */
        if (turn) {
            ladder_bulk_wait(); /* this lane's adds are done */
            ladder_fence_proxy_async_global();
            __syncwarp();
            if (lane == 0) ladder_turn_pass(turn);
        }
    }
    ladder_bulk_wait();
}

template <class Pol, class T, int HD>
__global__ void __launch_bounds__(ws_bwd_cfg<Pol, HD>::THREADS, 1)
    attn_bwd_wgmma_ws_kernel(args a, int *turns, const __grid_constant__ CUtensorMap tq,
                             const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv,
                             const __grid_constant__ CUtensorMap tdo, const __grid_constant__ CUtensorMap tb) {
    using C = ws_bwd_cfg<Pol, HD>;
    constexpr int BR = C::BR, BC = C::BC, ST = C::STAGES;
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint8_t *base = smem_raw + ((1024 - ladder_smem_addr(smem_raw) % 1024) % 1024);
    uint16_t *Ks = (uint16_t *)base, *Vs = (uint16_t *)(base + C::V_AT), *Qs = (uint16_t *)(base + C::Q_AT),
             *dOs = (uint16_t *)(base + C::DO_AT), *dSs = (uint16_t *)(base + C::DS_AT),
             *Bs = (uint16_t *)(base + C::BIAS_AT);
    float *L2s = (float *)(base + C::L2_AT), *Ds = (float *)(base + C::D_AT); /* stage s: + s * BR */
    float *dQs = (float *)(base + C::DQ_AT), *Ts = (float *)(base + C::TERM_AT);
    stage_info *info = (stage_info *)(base + C::INFO_AT);
    uint64_t *kv_full = (uint64_t *)(base + C::BAR_AT), *q_full = kv_full + 1;
    const owned own = owned_block(turns != nullptr, a.Hkv);
    int64_t s, j0;
    if (!ladder_attn_tile(a.cu_k, a.n_seqs, a.Sk, BC, own.tile, &s, &j0)) return; /* the whole block */
    const int64_t hk = own.hk, b = own.b;
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
    auto steps = kv_steps<Pol, BR, BC>(a, seq, b, hk, (int)(a.Hq / a.Hkv), j0, keys);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wg = warp / 4;
    if (threadIdx.x == 0) {
        ladder_mbarrier_init(kv_full, 1);
        for (int st = 0; st < ST; st++) ladder_mbarrier_init(&q_full[st], 1);
        ladder_mbarrier_init_fence();
    }
    __syncthreads(); /* the barriers: the last barrier every thread meets */

    if (wg == 0) { /* the producer: warp 0, its thread 0 issuing the copies; warp 1, the dQ writer; warps 2
                   * and 3, where the mod is additive at a head dim of 128, the line tile's (write_terms()) */
        ladder_setmaxnreg_dec<C::PRODUCER_REGS>();
        if (warp == 1) {
            write_dq<Pol, C>(a, turns, steps.left(), info, dQs, lane, b, seq, j0);
            return;
        }
        if constexpr (C::TERMS)
            if (warp >= 2) {
                write_terms<Pol, C>(a, steps, Ts, warp - 2, lane, b, seq.q0, seq.k0 + j0, (int)keys);
                return;
            }
        if (warp != 0 || !steps.more()) return;
        if (lane == 0) {
            ladder_mbarrier_expect(kv_full, 2 * C::K_BYTES);
            for (int c = 0; c < HD; c += 64) {
                ladder_tma_load(Ks + c * BC, &tk, kv_full, c, (int)(seq.k0 + j0), (int)hk, (int)b);
                ladder_tma_load(Vs + c * BC, &tv, kv_full, c, (int)(seq.k0 + j0), (int)hk, (int)b);
            }
        }
        for (int n = 0; steps.more(); steps.next(a), n++) {
            const int st = n % ST, slot = n % C::INFOS;
            const qtile q = steps.tile();
            if (n >= ST) ladder_named_barrier(C::FREE_BAR + st, C::FREE_THREADS); /* the consumers are done with it */
            if (lane == 0) {
                info[slot] = stage_info{q.row0, (int)q.i0, (int)q.rows, steps.masked(), steps.mods(), (int)q.h};
                const bool biased = Pol::EXTRAS && a.hooks.bias;
                ladder_mbarrier_expect(&q_full[st], 2 * C::Q_BYTES + (biased ? C::BIAS_BYTES : 0));
                const int row = (int)(seq.q0 + q.i0);
                for (int c = 0; c < HD; c += 64) {
                    ladder_tma_load(Qs + st * BR * HD + c * BR, &tq, &q_full[st], c, row, (int)q.h, (int)b);
                    ladder_tma_load(dOs + st * BR * HD + c * BR, &tdo, &q_full[st], c, row, (int)q.h, (int)b);
                }
                /* the bias (its map broadcast over batch rows and heads where it is); the next step's, read from
                 * DRAM once, is fetched into L2 a step ahead */
                if constexpr (Pol::EXTRAS)
                    if (biased) {
                        const int bb = ladder_tma_coord(a.bias.s[0], b);
                        for (int c = 0; c < BC; c += 64)
                            ladder_tma_load(Bs + st * (C::BIAS_BYTES / 2) + c * BR, &tb, &q_full[st],
                                            (int)(seq.k0 + j0) + c, row, ladder_tma_coord(a.bias.s[1], q.h), bb);
                        if (steps.left() > 1) {
                            const qtile f = steps.following();
                            for (int c = 0; c < BC; c += 64)
                                ladder_tma_prefetch(&tb, (int)(seq.k0 + j0) + c, (int)(seq.q0 + f.i0),
                                                    ladder_tma_coord(a.bias.s[1], f.h), bb);
                        }
                    }
            }
            for (int r = lane; r < BR; r += 32) {
                const bool in = r < q.rows;
                L2s[st * BR + r] = in ? ladder_attn_lse_for_bwd(a.lse[q.row0 + r]) * LADDER_LOG2E : INFINITY;
                Ds[st * BR + r] = in ? a.delta[q.row0 + r] : 0.0f;
            }
            __syncwarp();
            ladder_named_barrier_arrive(C::FULL_BAR + st, C::BAR_THREADS); /* lse, Delta, the info are in */
        }
        return;
    }

    /* a consumer: keys kw .. kw + 63 of the block, warp w of it keys kw + 16 w .. + 15, its thread rows k_row and
     * k_row + 8 of those */
    ladder_setmaxnreg_inc<C::CONSUMER_REGS>();
    const int cw = wg - 1, w = warp % 4, g = lane / 4, t = lane % 4, kw = 64 * cw, k_row = kw + 16 * w + g;
    const bool capped = a.softcap > 0.0f;
    const float sl2 = (capped ? 1.0f : a.scale) * LADDER_LOG2E; /* S = sl2 / log2(e) * x, x q.k or the capped S */
    const diag_window win(a.mask, j0, seq.Lq, seq.Lk, keys);
    /* dQ's part of this consumer: rows cw QO.., columns cw CO.. */
    constexpr int QO = C::QO, CO = C::CO;
    /* the hooks: is there a bias, does dS go to its gradient; this warp's part of a step (warp_part) */
    const bool biased = Pol::EXTRAS && a.hooks.bias, sink = Pol::EXTRAS && a.hooks.dbias.p;
    auto part_of = [&](const stage_info &q) {
        return warp_part{b, q.h, seq.q0 + q.i0, seq.k0 + j0 + kw + 16 * w, q.rows, (int)keys - (kw + 16 * w)};
    };
    /* Every operand's descriptor is the base's address plus its byte offset / 16 plus its fields, constants but for
     * the base (ladder_wgmma_desc_fields()): K and V as A (K-major, this consumer's rows of 128-row panels, their k16
     * step kk 32 bytes right in panel kk / 4); Q and dO as B, K-major for S^T and dP^T (BR-row panels), MN-major
     * for dV and dK (a k16 step 16 rows, 2048 bytes, down); dS^T as dQ's A (MN-major, from query qo; a k16 step 16
     * keys, two rows of core matrices, down); K as dQ's B (MN-major, column co: panel co / 64, co % 64 columns
     * into its rows). */
    const uint64_t at = ladder_wgmma_desc_address(base);
    constexpr uint64_t SW_K = ladder_wgmma_desc_fields(16, 1024, 1), SW_MN_Q = ladder_wgmma_desc_fields(BR * 128, 1024, 1),
                       SW_MN_K = ladder_wgmma_desc_fields(BC * 128, 1024, 1), CM_MN = ladder_wgmma_desc_fields(BR * 16, 128, 0);
    auto kv_step = [](int kk) { return (uint32_t)((kk / 4) * BC * 128 + (kk % 4) * 32); };
    auto q_step = [](int kk) { return (uint32_t)((kk / 4) * BR * 128 + (kk % 4) * 32); };
    uint64_t at_step; /* at, made opaque for each step: else the descriptors of every product, loop invariants, are
                       * computed once and held in registers through the loop */
    auto desc = [&](uint32_t byte, uint64_t fields) { return at_step + (byte >> 4) + fields; };

    float dk[HD / 8][4], dv[HD / 8][4];
#pragma unroll
    for (int i = 0; i < HD / 8; i++)
#pragma unroll
        for (int c = 0; c < 4; c++) dk[i][c] = dv[i][c] = 0.0f;
    /* flex's alibi with its slopes' gradient asked: this thread's share of head slopes_h's, over the block's steps of
     * that head, then the warp's sum stored as the warp's share of the head (store_slopes(): one slot for each warp
     * of each key tile, in the scratch that bwd_wgmma_dkdv() put in place of the partials) */
    const bool slopes_asked = is_alibi<Pol>() && a.flex.part[0];
    float slopes = 0.0f;
    int slopes_h = -1;
    auto store_slopes = [&](int h) {
        if (h < 0) return;
        float v = slopes;
#pragma unroll
        for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
        if (lane == 0) a.flex.part[0][((b * a.Hq + h) * gridDim.x + j0 / BC) * 8 + 4 * cw + w] = v;
    };
    /* another additive mod's buffers' gradients: the warps' line sums */
    [[maybe_unused]] const bool lines_asked = C::SUMS && flex_asked_reads(a.flex) > 0;
    [[maybe_unused]] float *Ws = (float *)(base + C::SUM_AT);
    const int n_steps = steps.left();
    if (n_steps > 0) ladder_mbarrier_wait(kv_full, 0);

    /* Step n at stage S (a constant: see the forward's C7513 note), the phase of parity ph. */
    auto step = [&](auto S, int n, uint32_t ph) {
        constexpr int st = decltype(S)::value;
        at_step = at;
        asm volatile("" : "+l"(at_step));
        ladder_named_barrier(C::FULL_BAR + st, C::BAR_THREADS); /* the stage's lse, Delta and info */
        ladder_mbarrier_wait(&q_full[st], ph);                    /* its Q and dO */
        const stage_info q = info[n % C::INFOS];
        const float *L2 = L2s + st * BR, *Dl = Ds + st * BR;
        if (slopes_asked && q.h != slopes_h) { /* a new head (the group's come one after another: list_steps) */
            store_slopes(slopes_h);
            slopes_h = q.h, slopes = 0.0f;
        }
        /* dropout's bits, drawn before the products: beside S^T and dP^T, the Philox rounds spilled */
        [[maybe_unused]] uint32_t kept = 0; /* read by the hooked policy's element rule alone */
        if constexpr (Pol::EXTRAS) kept = kept_part<BR>(a.hooks, a, part_of(q), lane);
        /* flex: the elements a masked step sees, found before the products too */
        [[maybe_unused]] const int q0 = (int)(seq.q0 + q.i0), k0 = (int)(seq.k0 + j0); /* fewer than 2^31 rows */
        [[maybe_unused]] uint32_t seen = 0;
        if constexpr (Pol::FLEX)
            if (q.masked) seen = seen_part<BR>(a, b, q.h, q0, q.rows, k0, (int)keys, q.mods, k_row, t);
        uint16_t *Bp = Bs + st * (C::BIAS_BYTES / 2) + cw * 64 * BR; /* this consumer's panel of the bias tile */
        float sc[BR / 8][4], dp[BR / 8][4]; /* S^T and dP^T: keys k_row (+8), queries 8 i + 2 t (+1) */
        ladder_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)
            ladder_wgmma_ss<T, BR, false>(sc, desc(kw * 128 + kv_step(kk), SW_K),
                                          desc(C::Q_AT + st * C::Q_BYTES + q_step(kk), SW_K), kk > 0);
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)
            ladder_wgmma_ss<T, BR, false>(dp, desc(C::V_AT + kw * 128 + kv_step(kk), SW_K),
                                          desc(C::DO_AT + st * C::Q_BYTES + q_step(kk), SW_K), kk > 0);
        ladder_wgmma_commit();
        ladder_wgmma_wait<0>();
        ladder_wgmma_hold(sc);
        ladder_wgmma_hold(dp);

        /* P^T and dS^T, in place of S^T and dP^T: a copy of the loop per case, behind uniform branches */
        if constexpr (Pol::FLEX) {
            if constexpr (C::TERMS) ladder_named_barrier(C::TERM_FULL_BAR + st, C::TERM_THREADS); /* the step's terms */
            [[maybe_unused]] const float *Tst = Ts + st * C::TERM_LINES;
            if constexpr (is_alibi<Pol>())
                if (slopes_asked) {
                    if (q.masked) p_and_ds_transposed_flex<Pol::MOD, BR, true, C::TERMS, true>(a, sc, dp, L2, Dl, Tst, b, q.h, q0, q.rows, k0, (int)keys, seen, k_row, t, slopes);
                    else p_and_ds_transposed_flex<Pol::MOD, BR, false, C::TERMS, true>(a, sc, dp, L2, Dl, Tst, b, q.h, q0, q.rows, k0, (int)keys, 0u, k_row, t, slopes);
                }
            if (!slopes_asked) {
                if (q.masked) p_and_ds_transposed_flex<Pol::MOD, BR, true, C::TERMS, false>(a, sc, dp, L2, Dl, Tst, b, q.h, q0, q.rows, k0, (int)keys, seen, k_row, t, slopes);
                else p_and_ds_transposed_flex<Pol::MOD, BR, false, C::TERMS, false>(a, sc, dp, L2, Dl, Tst, b, q.h, q0, q.rows, k0, (int)keys, 0u, k_row, t, slopes);
            }
            /* the buffers' gradients: this warp's line sums of dS', added up once every warp's are in (below); the
             * last step's are, since every consumer met "terms full" after them */
            if constexpr (C::SUMS) {
                if (lines_asked) warp_line_sums<Pol::MOD, C>(a, Ws, dp, 4 * cw + w, lane, b, q.h, j0 / BC, k_row);
            }
        } else if constexpr (Pol::EXTRAS) {
            if (q.masked) {
                if (capped) p_and_ds_transposed_hooked<T, BR, true, true>(a, sc, dp, L2, Dl, sl2, win, q.i0, k_row, Bp, biased, sink, kept, w, lane);
                else p_and_ds_transposed_hooked<T, BR, true, false>(a, sc, dp, L2, Dl, sl2, win, q.i0, k_row, Bp, biased, sink, kept, w, lane);
            } else {
                if (capped) p_and_ds_transposed_hooked<T, BR, false, true>(a, sc, dp, L2, Dl, sl2, win, q.i0, k_row, Bp, biased, sink, kept, w, lane);
                else p_and_ds_transposed_hooked<T, BR, false, false>(a, sc, dp, L2, Dl, sl2, win, q.i0, k_row, Bp, biased, sink, kept, w, lane);
            }
        } else if (q.masked) {
            if (capped) p_and_ds_transposed<BR, true, true>(a, sc, dp, L2, Dl, sl2, win, q.i0, k_row, t);
            else p_and_ds_transposed<BR, true, false>(a, sc, dp, L2, Dl, sl2, win, q.i0, k_row, t);
        } else {
            if (capped) p_and_ds_transposed<BR, false, true>(a, sc, dp, L2, Dl, sl2, win, q.i0, k_row, t);
            else p_and_ds_transposed<BR, false, false>(a, sc, dp, L2, Dl, sl2, win, q.i0, k_row, t);
        }
        /* rounded to 16 bits as A fragments: k16 step kb holds queries 16 kb ..; a[c] key row k_row + 8 (c % 2),
         * queries of n8 block 2 kb + c / 2 */
        uint32_t pa[BR / 16][4], da[BR / 16][4];
#pragma unroll
        for (int kb = 0; kb < BR / 16; kb++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const int i = 2 * kb + c / 2, h = c % 2;
                pa[kb][c] = ladder_pack2_float<T>(sc[i][2 * h], sc[i][2 * h + 1]);
                da[kb][c] = ladder_pack2_float<T>(dp[i][2 * h], dp[i][2 * h + 1]);
            }
        /* dS^T into its tile, for dQ */
        uint16_t *dst = dSs + st * BC * BR;
#pragma unroll
        for (int kb = 0; kb < BR / 16; kb++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                *(uint32_t *)(dst + ladder_cm_index(k_row + 8 * (c % 2), 16 * kb + 8 * (c / 2) + 2 * t, BR)) = da[kb][c];
        ladder_fence_proxy_async(); /* before the other consumer's wgmma reads them */

        /* dV += P^T dO, dK += dS^T Q */
        ladder_wgmma_hold(dv);
        ladder_wgmma_hold(dk);
#pragma unroll
        for (int kb = 0; kb < BR / 16; kb++) ladder_wgmma_hold(pa[kb]), ladder_wgmma_hold(da[kb]);
        ladder_wgmma_fence();
#pragma unroll
        for (int kb = 0; kb < BR / 16; kb++)
            ladder_wgmma_rs<T, HD, true>(dv, pa[kb], desc(C::DO_AT + st * C::Q_BYTES + kb * 2048, SW_MN_Q), true);
#pragma unroll
        for (int kb = 0; kb < BR / 16; kb++)
            ladder_wgmma_rs<T, HD, true>(dk, da[kb], desc(C::Q_AT + st * C::Q_BYTES + kb * 2048, SW_MN_Q), true);
        ladder_wgmma_commit();
        if (sink) { /* while dV's and dK's products run: the bias's gradient out of the tile */
            __syncwarp();
            sink_part<BR>(a.hooks.dbias, Bp, w, part_of(q), lane);
        }
        if (biased) ladder_fence_proxy_async(); /* the tile read (and written) before TMA fills it again */

        ladder_wgmma_wait<0>();
        ladder_wgmma_hold(dv);
        ladder_wgmma_hold(dk);

        /* dQ = dS K, once P^T's and dS^T's registers are free: rows qo + 16 w + g (+8), columns co + 8 i + 2 t (+1) */
        float dq[C::DQ_N / 8][4];
        ladder_named_barrier(C::DS_BAR, 128 * C::CONSUMERS); /* both halves of dS^T are in */
        ladder_wgmma_fence();
        constexpr uint32_t K_COL = (CO / 64) * BC * 128 + (CO % 64) * 2; /* K's column CO, times cw */
#pragma unroll
        for (int kb = 0; kb < BC / 16; kb++)
            ladder_wgmma_ss<T, C::DQ_N, true, true>(dq, desc(C::DS_AT + st * C::DS_BYTES + cw * QO * 16 + kb * 32 * BR, CM_MN),
                                                    desc(cw * K_COL + kb * 2048, SW_MN_K), kb > 0);
        ladder_wgmma_commit();
        /* while dQ's product runs: the step's line sums (the barrier above: every warp's are in) */
        if constexpr (C::SUMS)
            if (lines_asked) block_line_sums<Pol, C>(a, Ws, b, q.h, q0, j0 / BC, (int)threadIdx.x - 128);
        ladder_wgmma_wait<0>();
        ladder_wgmma_hold(dq);
        if (n + ST < n_steps) ladder_named_barrier(C::FREE_BAR + st, C::FREE_THREADS);
        /* this consumer's part of the step's dQ into the writer's tile, once the writer has read the last one */
        if (n > 0) ladder_named_barrier(C::DQ_FREE_BAR, C::BAR_THREADS);
        float *dst_q = dQs + (cw * QO + 16 * w + g) * C::DQ_STRIDE + cw * CO + 2 * t;
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
            for (int i = 0; i < C::DQ_N / 8; i++)
                *(float2 *)(dst_q + 8 * h * C::DQ_STRIDE + 8 * i) = make_float2(dq[i][2 * h], dq[i][2 * h + 1]);
        ladder_fence_proxy_async(); /* before the writer's bulk reductions read it */
        ladder_named_barrier_arrive(C::DQ_FULL_BAR, C::BAR_THREADS);
    };
    static_assert(ST == 2, "the loop takes the ring's two stages in turn");
    for (int n = 0; n < n_steps; n += 2) { /* steps n (stage 0) and n + 1 (stage 1), of phase (n / 2) % 2 */
        const uint32_t ph = (uint32_t)(n / 2) & 1;
        step(std::integral_constant<int, 0>{}, n, ph);
        if (n + 1 < n_steps) step(std::integral_constant<int, 1>{}, n + 1, ph);
    }
    if (slopes_asked) store_slopes(slopes_h);

    /* dK = scale * sum dS^T Q and dV, rounded to T: keys k_row (+8), columns 8 i + 2 t (+1) */
    const int64_t key0 = (b * a.Hkv + hk) * a.Sk + seq.k0 + j0; /* the tile's first key, as a row of dK and dV */
    /* dropout's 1 / (1 - p), which the stored P^T left out */
    const float vs = Pol::EXTRAS && a.hooks.dropout_p > 0.0f ? a.hooks.keep_scale : 1.0f;
    if (keys == BC && a.D == HD && a.Dv == HD && (((uintptr_t)a.dk | (uintptr_t)a.dv) & 3) == 0) {
        uint16_t *dk0 = a.dk + (key0 + k_row) * HD + 2 * t, *dv0 = a.dv + (key0 + k_row) * HD + 2 * t;
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
            for (int i = 0; i < HD / 8; i++) {
                *(uint32_t *)(dk0 + 8 * h * HD + 8 * i) =
                    ladder_pack2_float<T>(a.scale * dk[i][2 * h], a.scale * dk[i][2 * h + 1]);
                *(uint32_t *)(dv0 + 8 * h * HD + 8 * i) = ladder_pack2_float<T>(vs * dv[i][2 * h], vs * dv[i][2 * h + 1]);
            }
        return;
    }
#pragma unroll
    for (int c = 0; c < 4; c++) {
        const int key = k_row + 8 * (c / 2);
        if (key >= keys) continue;
        const int64_t row = key0 + key;
#pragma unroll
        for (int i = 0; i < HD / 8; i++) {
            const int col = 8 * i + 2 * t + (c & 1);
            if (col < a.D) a.dk[row * a.D + col] = ladder_from_float<T>(a.scale * dk[i][c]);
            if (col < a.Dv) a.dv[row * a.Dv + col] = ladder_from_float<T>(vs * dv[i][c]);
        }
    }
}

} // namespace

template <class Pol, class T, int HD>
ladder_status bwd_wgmma_dkdv(args &a, bool deterministic, ladder_scratch *accum, bool *ran) {
    using C = ws_bwd_cfg<Pol, HD>;
    *ran = false;
    bool wgmma = false;
    LADDER_TRY(use_wgmma(&wgmma));
    /* dQ's rows must be whole 16-byte pieces for the writer's bulk reductions */
    if (!wgmma || a.D % 4 != 0) return LADDER_OK;
    /* packed sequences: a box that reads across a sequence's end brings the next sequence's rows (or zeros past the
     * tensor), which the steps mask (their rows' lse is +inf, their keys lie past the block's), and a query tile's
     * turn counter is its first row's, so packed sequences' tiles never share one; but the hooks' bias map has no
     * packed rows */
    if (a.cu_q && Pol::EXTRAS) return LADDER_OK;
    /* flex: its dQ's adds take turns (its backward is the deterministic one), and a buffer's gradient asks for the
     * dQ pass that sums the shares, but alibi's slopes', which the consumers sum per head, and the other additive
     * mods' at a head dim of 128, which they sum along the lines (block_line_sums()) */
    if (Pol::FLEX && (!deterministic || (flex_asked_reads(a.flex) > 0 && !is_alibi<Pol>() && !C::SUMS)))
        return LADDER_OK;
    /* dropout: each row's draws start on a multiple of four (kept_part()) */
    if (Pol::EXTRAS && a.hooks.dropout_p > 0.0f && (a.Sk % 4 != 0 || a.hooks.offset % 4 != 0)) return LADDER_OK;
    const CUtensorMapDataType type =
        std::is_same<T, __nv_bfloat16>::value ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    CUtensorMap tq, tk, tv, tdo;
    if (!ladder_tma_map_16bit(&tq, type, a.q.p, a.B, a.Hq, a.Sq, a.D, a.q.s, C::BR) ||
        !ladder_tma_map_16bit(&tdo, type, a.dout.p, a.B, a.Hq, a.Sq, a.Dv, a.dout.s, C::BR) ||
        !ladder_tma_map_16bit(&tk, type, a.k.p, a.B, a.Hkv, a.Sk, a.D, a.k.s, C::BC) ||
        !ladder_tma_map_16bit(&tv, type, a.v.p, a.B, a.Hkv, a.Sk, a.Dv, a.v.s, C::BC))
        return LADDER_OK;
    /* the hooks: a bias TMA can describe, broadcast over batch rows and heads at most (one of them in its map);
     * its gradient, where asked for, in the bias's own storage with 16-byte aligned rows (sink_part()) */
    CUtensorMap tb = {};
    if (Pol::EXTRAS && a.hooks.bias) {
        const ladder_attn_ds_sink &d = a.hooks.dbias;
        if (!ladder_tma_map_16bit_broadcast(&tb, type, a.bias.p, a.B, a.Hq, a.Sq, a.Sk, a.bias.s, C::BR))
            return LADDER_OK;
        if (d.p && (d.f32 || d.s[3] != 1 || d.s[2] % 8 != 0 || d.s[1] % 8 != 0 || d.s[0] % 8 != 0 ||
                    (uintptr_t)d.p % 16 != 0))
            return LADDER_OK;
    }
    /* dQ's accumulator (the caller's for the atomics, *accum in deterministic mode) starts at zero (fully masked rows
     * stay so); in deterministic mode, so do the turn counters, one per query row (a tile uses its first row's) */
    const size_t accum_bytes = sizeof(float) * (size_t)(a.B * a.Hq * a.Sq * a.D);
    if (deterministic) {
        LADDER_TRY(accum->alloc(accum_bytes));
        a.dq_accum = (float *)accum->ptr;
    }
    LADDER_CUDA_TRY(cudaMemsetAsync(a.dq_accum, 0, accum_bytes));
    ladder_scratch turns;
    if (deterministic) {
        const size_t bytes = sizeof(int) * (size_t)(a.B * a.Hq * a.Sq);
        LADDER_TRY(turns.alloc(bytes));
        LADDER_CUDA_TRY(cudaMemsetAsync(turns.ptr, 0, bytes));
    }
    const dim3 grid((unsigned)ladder_attn_tiles_bound(a.Sk, C::BC, a.n_seqs), (unsigned)a.Hkv, (unsigned)a.B);
    /* alibi's slopes gradient: each consumer warp's share of each head in each key tile (0 where a tile sees none of
     * a head's rows), summed per head after the pass into the first Hq floats of the partials (the caller takes them
     * from there: bwd_launch()'s on_hopper) */
    ladder_scratch shares;
    float *slopes_grad = is_alibi<Pol>() ? a.flex.part[0] : nullptr;
    if (slopes_grad) {
        const size_t bytes = sizeof(float) * (size_t)(a.B * a.Hq * grid.x * 8);
        LADDER_TRY(shares.alloc(bytes));
        LADDER_CUDA_TRY(cudaMemsetAsync(shares.ptr, 0, bytes));
        a.flex.part[0] = (float *)shares.ptr;
    }
    /* another additive mod's buffers' gradients: the consumers' line sums go into partials of their own, a row per
     * key tile (block_line_sums()), zeroed here; after the pass each read's line sums go into the first floats of the
     * caller's partials (ladder_flex_bwd_with_dbuf() reads them there: bwd_launch()'s on_hopper) */
    ladder_scratch lines_part[LADDER_FLEX_MAX_READS];
    float *caller_part[LADDER_FLEX_MAX_READS] = {};
    if constexpr (C::SUMS)
        for (int r = 0; r < LADDER_FLEX_MAX_READS; r++) {
            if (!a.flex.part[r]) continue;
            const ladder_flex_line line = transposed_line(ladder_flex_read_line(Pol::MOD, r));
            const size_t bytes = sizeof(float) * (size_t)ladder_flex_partial_numel(line, a.B, a.Hq, a.Sk, a.Sq, C::BC);
            LADDER_TRY(lines_part[r].alloc(bytes));
            LADDER_CUDA_TRY(cudaMemsetAsync(lines_part[r].ptr, 0, bytes));
            caller_part[r] = a.flex.part[r], a.flex.part[r] = (float *)lines_part[r].ptr;
        }
    LADDER_TRY(ladder_allow_smem(attn_bwd_wgmma_ws_kernel<Pol, T, HD>, C::SMEM));
    attn_bwd_wgmma_ws_kernel<Pol, T, HD><<<grid, C::THREADS, C::SMEM>>>(a, (int *)turns.ptr, tq, tk, tv, tdo, tb);
    LADDER_LAUNCH_CHECK("attn_bwd_wgmma_ws_kernel");
    if constexpr (C::SUMS)
        for (int r = 0; r < LADDER_FLEX_MAX_READS; r++) {
            if (!caller_part[r]) continue;
            LADDER_TRY(ladder_flex_line_sums(transposed_line(ladder_flex_read_line(Pol::MOD, r)),
                                             (const float *)lines_part[r].ptr, a.B, a.Hq, a.Sk, a.Sq, C::BC, true,
                                             caller_part[r]));
            a.flex.part[r] = caller_part[r];
        }
    if (slopes_grad) {
        ladder_flex_head_sums_kernel<<<(unsigned)a.Hq, 32>>>((const float *)shares.ptr, a.B, a.Hq, grid.x * 8,
                                                             slopes_grad);
        LADDER_LAUNCH_CHECK("ladder_flex_head_sums_kernel");
        a.flex.part[0] = slopes_grad;
    }
    *ran = true;
    return LADDER_OK;
}

/* Does the Hopper pass run flex's score mod MOD at head dims (HD, HD)? Every mod at 64; at 128, where dK and dV hold
 * 128 registers a consumer thread, the mods that read no buffer (none, softcap) and the additive ones, whose terms
 * come from the line tile (a mod that reads buffers in the consumers spilled there, 4 to 92 bytes by ptxas). Where a
 * buffer's gradient is asked, alibi and, at 128, the other additive mods (bwd_wgmma_dkdv()). */
template <int MOD, int HD> constexpr bool flex_mod_on_hopper() {
    return HD == 64 || MOD == LADDER_FLEX_SCORE_NONE || MOD == LADDER_FLEX_SOFTCAP || ladder_flex_additive(MOD);
}

/* flex's dK/dV pass with its dQ on the Hopper kernel, policy flex<mod>, always in deterministic mode, for the score
 * mods flex_mod_on_hopper() names (ladder_flex_with_mod), instantiated by attention_flex_bwd_d*.sm90a.cu. */
template <int HD> ladder_status bwd_wgmma_flex(args &a, int mod, ladder_dtype dtype, ladder_scratch *accum, bool *ran) {
    *ran = false;
    return ladder_flex_with_mod(mod, [&](auto m) {
        using Pol = flex<decltype(m)::value>;
        if constexpr (!flex_mod_on_hopper<Pol::MOD, HD>()) return LADDER_OK;
        else
            return dtype == LADDER_BF16 ? bwd_wgmma_dkdv<Pol, __nv_bfloat16, HD>(a, true, accum, ran)
                                        : bwd_wgmma_dkdv<Pol, __half, HD>(a, true, accum, ran);
    });
}

} // namespace attn_tc

#endif
