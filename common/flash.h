/**
 * @file flash.h
 * @brief FlashAttention-2 forward and backward: the public API.
 *
 * Forward (common/attention.h has the mask, the softcap and the rules for fully masked rows):
 *
 *     S = scale * Q K^T (softcapped, masked),  P = softmax(S) row by row,  O = P V,  lse = logsumexp(S) per row
 *
 * Backward, given dO (and optionally dlse), recomputing P = exp(S - lse) rather than storing it:
 *
 *     Delta_i = rowsum(dO_i * O_i) - dlse_i
 *     dV = P^T dO,  dP = dO V^T,  dS = P * (dP - Delta),  dQ = scale * dS' K,  dK = scale * dS'^T Q
 *
 * where dS' = dS * (1 - (S/softcap)^2) with softcap, else dS. With Hkv < Hq, dK and dV of a key/value head
 * sum over the Hq/Hkv query heads that read it.
 *
 * Tensors: q [B,Hq,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv] may have any strides ([B,S,H,D] memory is a
 * [B,H,S,D] view with permuted strides); cu_seqlens_q/k (optional, i32 [N+1], contiguous, both or neither)
 * pack N sequences along Sq and Sk with B = 1. Outputs o [B,Hq,Sq,Dv], lse [B,Hq,Sq] (natural log, f32 at
 * every rung), dq, dk, dv (the shapes of q, k, v) are contiguous and overlap nothing; do may be strided, dlse
 * (optional, [B,Hq,Sq], f32) too. The backward reads o and lse as the forward wrote them.
 *
 * | rung           | q, k, v, do; o, dq, dk, dv   | lse, dlse | head dims |
 * |----------------|------------------------------|-----------|-----------|
 * | cpu            | f32                          | f32       | 1..256    |
 * | gpu_naive      | f32                          | f32       | 1..256    |
 * | gpu_tiled      | f32                          | f32       | 1..256    |
 * | gpu_tensorcore | bf16 or f16 (all the same)   | f32       | 1..256 (kernels for 64, 128, 192, 256; padded) |
 *
 * The CPU rung takes host pointers, the GPU rungs device pointers (cu_seqlens included). The cpu and
 * gpu_naive rungs are always deterministic; gpu_tiled and gpu_tensorcore accumulate dQ with atomics (the
 * tensor-core rung into an fp32 scratch) unless the problem asks for `deterministic`, which then runs a
 * separate dQ pass and repeats bitwise.
 */
#ifndef LADDER_FLASH_H
#define LADDER_FLASH_H

#include <stdbool.h>

#include "attention.h"
#include "rung.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One flash problem: the attention problem and how dQ is accumulated. */
typedef struct ladder_flash_problem {
    ladder_attention_problem attn; /**< sizes, scale, softcap, causal, window */
    bool deterministic;            /**< dQ by a separate pass instead of atomics: bitwise-repeatable results */
} ladder_flash_problem;

/** The tensors of one flash call. Unused ones stay absent (data NULL). */
typedef struct ladder_flash_args {
    ladder_tensor q;            /**< [B,Hq,Sq,D] queries */
    ladder_tensor k;            /**< [B,Hkv,Sk,D] keys */
    ladder_tensor v;            /**< [B,Hkv,Sk,Dv] values */
    ladder_tensor cu_seqlens_q; /**< optional [N+1] i32 offsets of packed query sequences (B = 1) */
    ladder_tensor cu_seqlens_k; /**< optional [N+1] i32 offsets of packed key sequences (with cu_seqlens_q) */
    ladder_tensor o;            /**< forward output [B,Hq,Sq,Dv]; read by the backward */
    ladder_tensor lse;          /**< forward output [B,Hq,Sq], f32, natural log; read by the backward */
    ladder_tensor dout;         /**< backward input dO [B,Hq,Sq,Dv] (the file do.npy) */
    ladder_tensor dlse;         /**< optional backward input [B,Hq,Sq], f32 */
    ladder_tensor dq;           /**< backward output [B,Hq,Sq,D] */
    ladder_tensor dk;           /**< backward output [B,Hkv,Sk,D] */
    ladder_tensor dv;           /**< backward output [B,Hkv,Sk,Dv] */
} ladder_flash_args;

/**
 * Forward: writes args->o and args->lse from q, k, v (and cu_seqlens_q/k). Validates everything first:
 * LADDER_ERR_ARG, LADDER_ERR_SHAPE, LADDER_ERR_UNSUPPORTED or LADDER_ERR_UNAVAILABLE with
 * ladder_last_error() naming the argument, and nothing written.
 */
ladder_status ladder_flash_fwd(ladder_rung rung, const ladder_flash_problem *problem, const ladder_flash_args *args);

/**
 * Backward: writes args->dq, dk, dv from do (and dlse), q, k, v, o, lse (and cu_seqlens_q/k). Validation as
 * for ladder_flash_fwd().
 */
ladder_status ladder_flash_bwd(ladder_rung rung, const ladder_flash_problem *problem, const ladder_flash_args *args);

/** Bytes the forward must move at least: reads q, k, v, writes o (in @p dtype) and lse (f32). */
double ladder_flash_fwd_bytes(const ladder_flash_problem *problem, ladder_dtype dtype);
/** Bytes the backward must move at least: reads q, k, v, o, do, lse, writes dq, dk, dv. */
double ladder_flash_bwd_bytes(const ladder_flash_problem *problem, ladder_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
