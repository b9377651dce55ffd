/**
 * @file memeff.h
 * @brief Memory-efficient attention (xformers' kernel as PyTorch ships it): flash's attention plus an additive
 *        bias with its gradient, dropout and split keys. The public API.
 *
 * Forward (common/attention.h has the mask, the softcap and the rules for fully masked rows):
 *
 *     S = softcap(scale * Q K^T) + bias (then masked),  P = softmax(S) row by row,  lse = logsumexp(S) per row
 *     P~ = P * keep / (1 - p),  O = P~ V
 *
 * where keep(b,h,i,j) is the dropout mask of common/philox.h (ladder_dropout_keep()): element (b, h, i, j) is kept
 * when the uniform float drawn from the (philox_offset + ((b*Hq + h)*Sq + i)*Sk + j)-th 32-bit output of
 * Philox4x32-10 keyed by philox_seed is > p, as PyTorch's memory-efficient kernel draws it. lse is that of the
 * undropped softmax. With packed sequences (cu_seqlens, B = 1), b = 0 and i, j are positions in the packed
 * tensors, for the bias and the dropout counter alike. A bias of -inf masks its element; a row whose every score
 * is -inf is a fully masked row (o = 0, lse = -inf, zero gradients), never NaN.
 *
 * Backward, given dO (and optionally dlse), recomputing P = exp(S - lse) and the mask rather than storing them:
 *
 *     Delta_i = rowsum(dO_i * O_i) - dlse_i          (unchanged by dropout: O already holds the kept, scaled P~)
 *     dV = P~^T dO,  dP = (dO V^T) * keep / (1 - p),  dS = P * (dP - Delta)
 *     dQ = scale * dS' K,  dK = scale * dS'^T Q,  dbias = dS summed over every dimension the bias broadcasts
 *
 * where dS' = dS * (1 - (softcap(s)/softcap)^2) with softcap, else dS. No scale multiplies dbias: the bias is
 * added to S after the scale (and after the softcap), so dS/dbias = 1. With Hkv < Hq, dK and dV of a key/value
 * head sum over the Hq/Hkv query heads that read it.
 *
 * Tensors: q [B,Hq,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv] may have any strides; cu_seqlens_q/k (optional, i32
 * [N+1], contiguous, both or neither) pack N sequences along Sq and Sk with B = 1. bias (optional) has rank 4
 * and each dimension either the problem's size (B, Hq, Sq, Sk) or 1, with any strides, 0 included: a broadcast
 * costs no copy, whether it is a size-1 dimension or a stride-0 view. Outputs o [B,Hq,Sq,Dv], lse [B,Hq,Sq]
 * (natural log, f32 at every rung), dq, dk, dv (the shapes of q, k, v) and dbias (optional: the bias's shape,
 * with bias only) are contiguous and overlap nothing; do may be strided, dlse (optional, [B,Hq,Sq], f32) too.
 * The backward reads o and lse as the forward wrote them, with the same problem (the same dropout mask).
 *
 * | rung           | q, k, v, bias, do; o, dq, dk, dv, dbias | lse, dlse | head dims |
 * |----------------|-----------------------------------------|-----------|-----------|
 * | cpu            | f32                                     | f32       | 1..256    |
 * | gpu_naive      | f32                                     | f32       | 1..256    |
 * | gpu_tiled      | f32                                     | f32       | 1..256    |
 * | gpu_tensorcore | bf16 or f16 (all the same)              | f32       | 1..256    |
 * | gpu_tensorcore | f32 (all): TF32 products, see allow_tf32 | f32       | 1..128    |
 *
 * With f32 inputs the tensor-core rung multiplies on the TF32 matrix units: by default each product is three TF32
 * products (x = big + small, a b ~ big big + big small + small big, as CUTLASS's 3xTF32 "fast accurate" fp32 GEMM
 * does), fp32-level error; with allow_tf32 one TF32 product, about 2^-11 relative error per operand and roughly
 * three times fewer matrix instructions. Head dims above ::LADDER_MEMEFF_TF32_MAX_HEAD_DIM are refused there
 * (LADDER_ERR_UNSUPPORTED); bf16, f16 or the gpu_tiled rung take them.
 *
 * The CPU rung takes host pointers, the GPU rungs device pointers (cu_seqlens included). The cpu and gpu_naive
 * rungs are always deterministic, dbias included (a broadcast bias's gradient is a sum in a fixed order, never
 * atomics).
 */
#ifndef LADDER_MEMEFF_H
#define LADDER_MEMEFF_H

#include <stdbool.h>
#include <stdint.h>

#include "attention.h"
#include "rung.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One memeff problem: the attention problem, dropout, split keys and how dQ is accumulated. */
typedef struct ladder_memeff_problem {
    ladder_attention_problem attn; /**< sizes, scale, softcap, mask */
    double dropout_p;              /**< probability of dropping an element of P, in [0, 1) (as a float too); 0: none */
    uint64_t philox_seed;          /**< the Philox4x32-10 key (low 32 bits key word 0, high 32 bits key word 1) */
    uint64_t philox_offset;        /**< the Philox output that element (0,0,0,0) draws; with dropout, philox_offset
                                        + B*Hq*Sq*Sk must not overflow uint64 (64-bit counters never wrap) */
    int64_t splits;                /**< split-key forward: 0 automatic, 1 none, N (at most Sk): N blocks share a query
                                        tile's keys (the cpu and gpu_naive rungs need none) */
    bool deterministic;            /**< no atomics in the backward: bitwise-repeatable results (dbias included) */
    bool allow_tf32;               /**< f32 inputs at the tensor-core rung: one TF32 product per multiply (PyTorch's
                                        allow_tf32) instead of three (fp32-level error, the default); ignored
                                        elsewhere */
} ladder_memeff_problem;

/** The largest D and Dv the tensor-core rung takes with f32 inputs (its TF32 kernels: 64 and 128). */
#define LADDER_MEMEFF_TF32_MAX_HEAD_DIM 128

/** The tensors of one memeff call. Unused ones stay absent (data NULL). */
typedef struct ladder_memeff_args {
    ladder_tensor q;            /**< [B,Hq,Sq,D] queries */
    ladder_tensor k;            /**< [B,Hkv,Sk,D] keys */
    ladder_tensor v;            /**< [B,Hkv,Sk,Dv] values */
    ladder_tensor cu_seqlens_q; /**< optional [N+1] i32 offsets of packed query sequences (B = 1) */
    ladder_tensor cu_seqlens_k; /**< optional [N+1] i32 offsets of packed key sequences (with cu_seqlens_q) */
    ladder_tensor bias;         /**< optional, rank 4, broadcastable to [B,Hq,Sq,Sk]: each dim the problem's size or 1,
                                     any strides (0 allowed) */
    ladder_tensor o;            /**< forward output [B,Hq,Sq,Dv]; read by the backward */
    ladder_tensor lse;          /**< forward output [B,Hq,Sq], f32, natural log of the undropped softmax */
    ladder_tensor dout;         /**< backward input dO [B,Hq,Sq,Dv] (the file do.npy) */
    ladder_tensor dlse;         /**< optional backward input [B,Hq,Sq], f32 */
    ladder_tensor dq;           /**< backward output [B,Hq,Sq,D] */
    ladder_tensor dk;           /**< backward output [B,Hkv,Sk,D] */
    ladder_tensor dv;           /**< backward output [B,Hkv,Sk,Dv] */
    ladder_tensor dbias;        /**< optional backward output, the bias's shape, contiguous: dS summed over each dim
                                     where bias has 1 and the problem more */
} ladder_memeff_args;

/**
 * Forward: writes args->o and args->lse from q, k, v, bias (and cu_seqlens_q/k). Validates everything first:
 * LADDER_ERR_ARG, LADDER_ERR_SHAPE, LADDER_ERR_UNSUPPORTED or LADDER_ERR_UNAVAILABLE with ladder_last_error()
 * naming the argument, and nothing written.
 */
ladder_status ladder_memeff_fwd(ladder_rung rung, const ladder_memeff_problem *problem,
                                const ladder_memeff_args *args);

/**
 * Backward: writes args->dq, dk, dv (and dbias when given) from do (and dlse), q, k, v, bias, o, lse (and
 * cu_seqlens_q/k). Validation as for ladder_memeff_fwd(); dbias without bias is refused.
 */
ladder_status ladder_memeff_bwd(ladder_rung rung, const ladder_memeff_problem *problem,
                                const ladder_memeff_args *args);

/**
 * Bytes the forward must move at least: reads q, k, v and the bias (@p bias_elems elements: 0 without one, the
 * number of distinct elements of a broadcast one), writes o (in @p dtype) and lse (f32).
 */
double ladder_memeff_fwd_bytes(const ladder_memeff_problem *problem, ladder_dtype dtype, double bias_elems);
/**
 * Bytes the backward must move at least: reads q, k, v, bias, o, do, lse, writes dq, dk, dv and dbias
 * (@p dbias_elems elements, 0 without).
 */
double ladder_memeff_bwd_bytes(const ladder_memeff_problem *problem, ladder_dtype dtype, double bias_elems,
                               double dbias_elems);

#ifdef __cplusplus
}
#endif
#endif
