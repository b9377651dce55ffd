/**
 * @file recurrent.h
 * @brief Gated linear attention as a recurrence: the public API.
 *
 * Per sequence n and head h, a K x V state S (fp32) runs over the sequence's
 * tokens t in order (from the last to the first with `reverse`):
 *
 *     S_t = exp(g_t + g_gamma) * diag(exp(gk_t)) S_{t-1} diag(exp(gv_t)) + k_t v_t^T
 *     o_t = scale * S_t^T q_t
 *
 * that is, element by element, S_t[i,j] = exp(g_t + g_gamma + gk_t[i] + gv_t[j]) * S_{t-1}[i,j] + k_t[i] v_t[j].
 * Every gate is optional (an absent one is 0) and in log space; any finite
 * value works. S starts at h0[n] when h0 is given, at 0 otherwise, and its
 * last value is written to ht[n] when ht is given.
 *
 * Backward, given do = dL/do and optionally dht = dL/dht: dq, dk, dv always;
 * dg, dg_gamma, dgk, dgv, dh0 exactly when g, g_gamma, gk, gv, h0 were given.
 * The gate gradients follow from reverse cumulative sums, per sequence
 * (chapters/02-recurrent-gated-attention.md derives them):
 *
 *     dgk_t = sum_{s >= t} (q_s * dq_s - k_s * dk_s) + rowsum(ht * dht)
 *     dgv_t = sum_{s >= t} (o_s * do_s - v_s * dv_s) + colsum(ht * dht)
 *     dg_t  = sum over the K channels of dgk_t (as if gk were given);  dg_gamma[h] = sum_t dg_t
 *
 * (s >= t in the order the recurrence runs.) Variable-length batches:
 * cu_seqlens [N+1] with B = 1 packs N sequences along T; each has its own
 * h0[n], ht[n], dht[n], dh0[n], and nothing crosses from one to the next.
 * Without cu_seqlens, N = B and each batch row is one sequence.
 *
 * Every rung takes the same problem and arguments. Inputs may be strided;
 * cu_seqlens and the outputs must be contiguous (LADDER_ERR_UNSUPPORTED
 * otherwise), and no output may overlap an input or another output
 * (LADDER_ERR_ARG otherwise). Which rung takes which dtypes:
 *
 * | rung           | q, k, v, do; o, dq, dk, dv    | gates, h0, ht, dht and their gradients |
 * |----------------|-------------------------------|----------------------------------------|
 * | cpu            | f32                           | f32                                    |
 * | gpu_naive      | f32                           | f32                                    |
 * | gpu_tiled      | f32                           | f32                                    |
 * | gpu_tensorcore | bf16 or f16 (all the same)    | f32                                    |
 *
 * The gpu_tensorcore rung runs the chunked form (chunks of 64 steps in
 * sub-chunks of 16, chapters/02-recurrent-gated-attention.md): the state and
 * every sum stay fp32. The forward rounds the operands of its matrix products
 * to the input dtype: the state at each chunk's start, q and k scaled by their
 * in-chunk decays, the chunk's pair weights (so with f16 inputs a state entry
 * past 65504 overflows). The backward carries each operand as a bf16 pair,
 * hi + lo (about 16 bits, fp32's range), for either input dtype. The pairs
 * inside a sub-chunk, and with gv every pair's column weight, are summed in
 * fp32 from the 16-bit inputs, the gate-gradient sums in double. Outputs are
 * rounded once, at the end.
 *
 * The CPU rung takes host pointers, the GPU rungs device pointers
 * (cu_seqlens included). Every rung is deterministic: bitwise-identical repeats.
 */
#ifndef LADDER_RECURRENT_H
#define LADDER_RECURRENT_H

#include <stdbool.h>
#include <stdint.h>

#include "rung.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest key (K) and value (V) head dimension any rung takes. */
#define LADDER_RECURRENT_MAX_KV 256

/** Sizes and options of one recurrent problem. */
typedef struct ladder_recurrent_problem {
    int64_t B;    /**< batch size (1 when cu_seqlens is given) */
    int64_t T;    /**< tokens per batch row (the packed total with cu_seqlens) */
    int64_t H;    /**< heads */
    int64_t K;    /**< key head dimension, 1..LADDER_RECURRENT_MAX_KV */
    int64_t V;    /**< value head dimension, 1..LADDER_RECURRENT_MAX_KV */
    double scale; /**< o = scale * S^T q; 0 means 1/sqrt(K); must be finite as a float (the rungs multiply in fp32) */
    bool reverse; /**< the recurrence runs from each sequence's last token to its first */
} ladder_recurrent_problem;

/** The tensors of one recurrent call. Absent ones have data NULL. */
typedef struct ladder_recurrent_args {
    ladder_tensor q;          /**< [B,T,H,K] queries */
    ladder_tensor k;          /**< [B,T,H,K] keys */
    ladder_tensor v;          /**< [B,T,H,V] values */
    ladder_tensor g;          /**< optional [B,T,H] log gate per step and head */
    ladder_tensor g_gamma;    /**< optional [H] constant log decay per head */
    ladder_tensor gk;         /**< optional [B,T,H,K] log gate per key channel (the state's rows) */
    ladder_tensor gv;         /**< optional [B,T,H,V] log gate per value channel (the state's columns) */
    ladder_tensor h0;         /**< optional [N,H,K,V] initial state, f32 */
    ladder_tensor cu_seqlens; /**< optional [N+1] i32 sequence offsets; requires B = 1 */
    ladder_tensor o;          /**< forward output [B,T,H,V] */
    ladder_tensor ht;         /**< optional forward output [N,H,K,V]: the final state, f32 */
    ladder_tensor do_;        /**< backward input [B,T,H,V], dL/do (the file name is do.npy) */
    ladder_tensor dht;        /**< optional backward input [N,H,K,V], dL/dht, f32 */
    ladder_tensor dq;         /**< backward output [B,T,H,K] */
    ladder_tensor dk;         /**< backward output [B,T,H,K] */
    ladder_tensor dv;         /**< backward output [B,T,H,V] */
    ladder_tensor dg;         /**< backward output [B,T,H], f32: given exactly when g is */
    ladder_tensor dg_gamma;   /**< backward output [H], f32: given exactly when g_gamma is */
    ladder_tensor dgk;        /**< backward output [B,T,H,K], f32: given exactly when gk is */
    ladder_tensor dgv;        /**< backward output [B,T,H,V], f32: given exactly when gv is */
    ladder_tensor dh0;        /**< backward output [N,H,K,V], f32: given exactly when h0 is */
} ladder_recurrent_args;

/**
 * Forward: writes args->o (and args->ht when given) from q, k, v, the gates
 * given and h0. Validates everything first: LADDER_ERR_ARG, LADDER_ERR_SHAPE,
 * LADDER_ERR_UNSUPPORTED or LADDER_ERR_UNAVAILABLE with ladder_last_error()
 * naming the argument, and nothing written.
 */
ladder_status ladder_recurrent_fwd(ladder_rung rung, const ladder_recurrent_problem *problem,
                                   const ladder_recurrent_args *args);

/**
 * Backward: writes dq, dk, dv and the gradient of every optional input given
 * (dg, dg_gamma, dgk, dgv, dh0) from do, dht (absent means 0) and the forward's
 * inputs. Validation as for ladder_recurrent_fwd().
 */
ladder_status ladder_recurrent_bwd(ladder_rung rung, const ladder_recurrent_problem *problem,
                                   const ladder_recurrent_args *args);

/** The scale the problem means: problem->scale, or 1/sqrt(K) when it is 0. */
double ladder_recurrent_scale(const ladder_recurrent_problem *problem);

#ifdef __cplusplus
}
#endif
#endif
