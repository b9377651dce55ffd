/**
 * @file dynconv.h
 * @brief Dynamic (per-token) causal depthwise convolution: the public API.
 *
 * Forward, for every batch b, token t and channel d:
 *
 *     out[b,t,d] = sum_{w<W} kernels[b,t,d,w] * x[b, t+w-W+1, d]
 *
 * where x is zero before the start of the token's sequence (t+w-W+1 < start).
 * Backward, given dout = dL/dout:
 *
 *     dkernels[b,t,d,w] = dout[b,t,d] * x[b, t+w-W+1, d]
 *     dx[b,s,d]         = sum_{w<W} dout[b, s+W-1-w, d] * kernels[b, s+W-1-w, d, w]
 *
 * where the sum skips tokens s+W-1-w past the end of s's sequence.
 *
 * Every rung takes the same problem and arguments. Inputs (x, kernels, dout)
 * may be strided; cu_seqlens and the outputs (out, dx, dkernels) must be
 * contiguous (LADDER_ERR_UNSUPPORTED otherwise), and no output may overlap an
 * input or another output (LADDER_ERR_ARG otherwise).
 * Which rung takes which dtypes:
 *
 * | rung           | x, kernels, dout | out, dx, dkernels |
 * |----------------|------------------|-------------------|
 * | cpu            | f32              | f32               |
 * | gpu_naive      | f32              | f32               |
 * | gpu_tiled      | f32              | f32               |
 * | gpu_tensorcore | bf16 or f16 (all the same) | the input dtype |
 *
 * The CPU rung takes host pointers, the GPU rungs device pointers (cu_seqlens
 * included). Every rung is deterministic: no atomics, bitwise-identical repeats.
 */
#ifndef LADDER_DYNCONV_H
#define LADDER_DYNCONV_H

#include <stdint.h>

#include "rung.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest kernel width any rung takes. */
#define LADDER_DYNCONV_MAX_W 64

/** Sizes of one dynconv problem. */
typedef struct ladder_dynconv_problem {
    int64_t B; /**< batch size (1 when cu_seqlens is given) */
    int64_t T; /**< tokens per batch row (the packed total with cu_seqlens) */
    int64_t D; /**< channels */
    int W;     /**< kernel width, 1..LADDER_DYNCONV_MAX_W */
} ladder_dynconv_problem;

/** The tensors of one dynconv call. Unused ones stay absent (data NULL). */
typedef struct ladder_dynconv_args {
    ladder_tensor x;          /**< [B,T,D] input */
    ladder_tensor kernels;    /**< [B,T,D,W] per-token kernels */
    ladder_tensor cu_seqlens; /**< optional [N+1] i32 sequence offsets; requires B = 1 */
    ladder_tensor out;        /**< forward output [B,T,D], contiguous */
    ladder_tensor dout;       /**< backward input [B,T,D] */
    ladder_tensor dx;         /**< backward output [B,T,D], contiguous */
    ladder_tensor dkernels;   /**< backward output [B,T,D,W], contiguous */
} ladder_dynconv_args;

/**
 * Forward: writes args->out from args->x, args->kernels (and cu_seqlens).
 * Validates everything first: LADDER_ERR_ARG, LADDER_ERR_SHAPE,
 * LADDER_ERR_UNSUPPORTED or LADDER_ERR_UNAVAILABLE with ladder_last_error()
 * naming the argument, and nothing written.
 */
ladder_status ladder_dynconv_fwd(ladder_rung rung, const ladder_dynconv_problem *problem, const ladder_dynconv_args *args);

/**
 * Backward: writes args->dx and args->dkernels from args->dout, args->x,
 * args->kernels (and cu_seqlens). Validation as for ladder_dynconv_fwd().
 */
ladder_status ladder_dynconv_bwd(ladder_rung rung, const ladder_dynconv_problem *problem, const ladder_dynconv_args *args);

/** Bytes the forward must move: reads x and kernels, writes out, (W+2)*B*T*D elements. */
double ladder_dynconv_fwd_bytes(const ladder_dynconv_problem *problem, ladder_dtype dtype);
/** Bytes the backward must move: reads dout, x, kernels, writes dx, dkernels, (2W+3)*B*T*D elements. */
double ladder_dynconv_bwd_bytes(const ladder_dynconv_problem *problem, ladder_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
