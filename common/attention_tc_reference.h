/**
 * @file attention_tc_reference.h
 * @brief The reference that the tensor-core rung of every attention algorithm (flash, memeff, flex) is checked
 *        against: softmax attention in float32 with the intermediates that rung stores in 16 bits rounded where it
 *        rounds them. A test facility, apart from the cpu rung, which knows nothing of it.
 *
 * The tensor-core rung takes bf16 or fp16 inputs and accumulates in fp32, but some intermediates are operands of
 * the next matrix product, and an mma takes 16-bit operands: they are rounded on the way. A plain fp32 reference on
 * the rounded inputs misses those roundings, and then an element far below the output's rms may differ by more
 * than the element rule allows (chapter 3, "Comparing the tensor-core rung"). This reference rounds to @p round
 * (bf16 or f16; f32: nowhere) at the same places:
 *   - forward: the keys of a row in tiles of ::LADDER_ATTN_TC_FWD_KEYS, aligned to multiples of it as the rung's
 *     key tiles are, with an online softmax across the tiles; within a tile P~ = exp(S - m), m the running max
 *     after the tile, is rounded before it multiplies V, where dropout keeps it: O += keep round(P~) V. The row
 *     sum l adds the unrounded P~, kept or not, and O = O / (1 - p) / l at the end;
 *   - backward: o as the forward stored it, rounded, in Delta = rowsum(dO o) - dlse; P = exp(S - lse); dV
 *     collects keep round(P) dO, times 1 / (1 - p) once at the end; dS = P (dP f - Delta) with dropout's factor
 *     f = keep / (1 - p), and dQ and dK collect round(dS') with dS' = dS times the softcap's slope. dbias gets dS
 *     itself (before the slope), summed over the bias's broadcast axes.
 *
 * The problem is that of common/attention.h (mask, softcap, GQA, packed sequences, dlse), plus memeff's hooks:
 *     S = softcap(scale * q.k) + bias[b, h, i, j]      (then masked)
 * with the bias read through its strides (0 on each axis where it has size 1, whatever its stride there), and
 * dropout's keep (1 or 0) from Philox at element (b, h, i, j) (common/philox.h). With packed sequences, b = 0
 * and i, j are positions in the packed tensors, for the bias and the counter alike. flex's mods come in as
 * functions (::ladder_attn_tc_reference_mods): S = score(scale * q.k) with its slope, an element mask besides the
 * problem's, and each element's dS handed back for the gradients of what the score read.
 *
 * Written to be read, not to be fast: every input is first copied into a contiguous array, then OpenMP runs
 * over query rows (the forward, dQ) and over keys (dK, dV), each output element written by one thread, every sum
 * in one fixed order.
 */
#ifndef LADDER_ATTENTION_TC_REFERENCE_H
#define LADDER_ATTENTION_TC_REFERENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "attention.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Keys per tile of the tensor-core forward (gpu_tensorcore/attention_tc_fwd.cuh, fwd_cfg::BC, which is defined by
 * it), whose P is rounded per tile: 64 up to a head dim of 128, 32 above (where a warp's O and S would not fit in
 * registers).
 */
#define LADDER_ATTN_TC_FWD_KEYS(D, Dv) ((D) <= 128 && (Dv) <= 128 ? 64 : 32)

/**
 * flex's mods as the reference calls them, element by element, at query position i and key position j of head h,
 * batch row b (@p ctx is passed back to each). A zeroed struct adds nothing; with score, the problem's softcap is 0.
 */
typedef struct ladder_attn_tc_reference_mods {
    const void *ctx; /**< what the functions read (flex's problem, buffers and block lists) */
    /** S from s = scale * q.k, and dS/ds into *slope */
    float (*score)(const void *ctx, float s, int64_t b, int64_t h, int64_t i, int64_t j, float *slope);
    /** may row i see key j (on top of the problem's mask)? NULL: every key the mask allows */
    bool (*allowed)(const void *ctx, int64_t b, int64_t h, int64_t i, int64_t j);
    /** the backward: s and dS = P (dP - Delta) (before the slope) of every element a row sees, once each, from
     *  several threads at once; NULL: not asked */
    void (*sink)(const void *ctx, int64_t b, int64_t h, int64_t i, int64_t j, float s, float dS);
} ladder_attn_tc_reference_mods;

/**
 * The tensors and hooks of one call, host memory, f32. Absent tensors have data NULL; a zeroed struct with q, k,
 * v and the outputs set is plain attention.
 */
typedef struct ladder_attn_tc_reference_args {
    ladder_tensor q;            /**< [B,Hq,Sq,D], any strides */
    ladder_tensor k;            /**< [B,Hkv,Sk,D], any strides */
    ladder_tensor v;            /**< [B,Hkv,Sk,Dv], any strides */
    ladder_tensor cu_seqlens_q; /**< optional [N+1] i32 offsets of packed query sequences (B = 1) */
    ladder_tensor cu_seqlens_k; /**< optional [N+1] i32 offsets of packed key sequences (with cu_seqlens_q) */
    ladder_tensor bias;         /**< optional, rank 4, each dim the problem's (B, Hq, Sq, Sk) or 1; any strides */
    ladder_tensor o;            /**< forward output [B,Hq,Sq,Dv], contiguous; read by the backward */
    ladder_tensor lse;          /**< forward output [B,Hq,Sq], contiguous; read by the backward */
    ladder_tensor dout;         /**< backward input dO [B,Hq,Sq,Dv], any strides */
    ladder_tensor dlse;         /**< optional backward input [B,Hq,Sq], any strides */
    ladder_tensor dq;           /**< backward output [B,Hq,Sq,D], contiguous */
    ladder_tensor dk;           /**< backward output [B,Hkv,Sk,D], contiguous */
    ladder_tensor dv;           /**< backward output [B,Hkv,Sk,Dv], contiguous */
    ladder_tensor dbias;        /**< optional backward output (with bias), the bias's shape, contiguous */
    double dropout_p;           /**< probability of dropping an element of P, in [0, 1) (used as a float); 0: none */
    uint64_t philox_seed;       /**< Philox key of the dropout mask */
    uint64_t philox_offset;     /**< the Philox output that element (0, 0, 0, 0) draws */
    ladder_attn_tc_reference_mods mods; /**< flex's score and mask functions; zeroed: none */
} ladder_attn_tc_reference_args;

/**
 * Designated initializers of the reference's tensors that every attention algorithm's args struct names alike (q,
 * k, v, cu_seqlens_q/k, o, lse, dout, dlse, dq, dk, dv), from the args struct @p a points to: flash's and memeff's
 * call_emulating build their ::ladder_attn_tc_reference_args with it and add their hooks.
 */
#define LADDER_ATTN_TC_REFERENCE_TENSORS(a)                                                                            \
    .q = (a)->q, .k = (a)->k, .v = (a)->v, .cu_seqlens_q = (a)->cu_seqlens_q, .cu_seqlens_k = (a)->cu_seqlens_k,     \
    .o = (a)->o, .lse = (a)->lse, .dout = (a)->dout, .dlse = (a)->dlse, .dq = (a)->dq, .dk = (a)->dk, .dv = (a)->dv

/**
 * The forward: o and lse, the kept P~ rounded to @p round per key tile (see the file comment). Assumes input that the
 * algorithm's dispatcher validated (shapes, f32 host tensors, cu_seqlens, the bias's broadcast, the Philox
 * counter range). LADDER_ERR_NOMEM when scratch cannot be allocated.
 */
ladder_status ladder_attn_tc_reference_fwd(const ladder_attention_problem *p, const ladder_attn_tc_reference_args *a,
                                           ladder_dtype round);

/**
 * The backward: dq, dk, dv (and dbias when given), with o, the kept P and dS' rounded to @p round (see the file
 * comment). Preconditions as ladder_attn_tc_reference_fwd(); o and lse are the forward's, with the same problem and
 * hooks. With dbias it allocates a [B,Hq,Sq,Sk] f32 scratch for dS.
 */
ladder_status ladder_attn_tc_reference_bwd(const ladder_attention_problem *p, const ladder_attn_tc_reference_args *a,
                                           ladder_dtype round);

#ifdef __cplusplus
}
#endif
#endif
