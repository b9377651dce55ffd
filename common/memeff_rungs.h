/**
 * @file memeff_rungs.h
 * @brief Internal: the memeff rung functions behind ladder_memeff_fwd/bwd, and the bias as the rungs read it.
 *
 * One signature at every rung. They assume the dispatcher validated the input (sizes, shapes, dtypes,
 * cu_seqlens, the bias's broadcast, the Philox counter range); call the dispatchers, not these.
 */
#ifndef LADDER_MEMEFF_RUNGS_H
#define LADDER_MEMEFF_RUNGS_H

#include "memeff.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Signature shared by every memeff rung function. */
typedef ladder_status (*memeff_fn)(const ladder_memeff_problem *p, const ladder_memeff_args *a);

/** The rung functions by ::ladder_rung (NULL where a rung was not built): the dispatcher's table. */
extern const memeff_fn memeff_fwd_rungs[LADDER_RUNG_COUNT];
/** The backward's table. */
extern const memeff_fn memeff_bwd_rungs[LADDER_RUNG_COUNT];

ladder_status memeff_fwd_cpu(const ladder_memeff_problem *p, const ladder_memeff_args *a);
ladder_status memeff_bwd_cpu(const ladder_memeff_problem *p, const ladder_memeff_args *a);
ladder_status memeff_fwd_gpu_naive(const ladder_memeff_problem *p, const ladder_memeff_args *a);
ladder_status memeff_bwd_gpu_naive(const ladder_memeff_problem *p, const ladder_memeff_args *a);
ladder_status memeff_fwd_gpu_tiled(const ladder_memeff_problem *p, const ladder_memeff_args *a);
ladder_status memeff_bwd_gpu_tiled(const ladder_memeff_problem *p, const ladder_memeff_args *a);
/**
 * The tensor-core rung's reference (common/attention_tc_reference.h) behind the forward dispatcher's validation (the
 * cpu rung's rules): o and lse with the kept P rounded to @p round (bf16 or f16; f32: nowhere) where that rung
 * rounds it. For tests, through ladder_algo::call_emulating.
 */
ladder_status memeff_fwd_emulating(const ladder_memeff_problem *p, const ladder_memeff_args *a, ladder_dtype round);
/**
 * The tensor-core rung's reference behind the backward dispatcher's validation: dq, dk, dv and dbias with o, the
 * kept P and dS rounded to @p round where that rung rounds them. For tests, through ladder_algo::call_emulating.
 */
ladder_status memeff_bwd_emulating(const ladder_memeff_problem *p, const ladder_memeff_args *a, ladder_dtype round);
ladder_status memeff_fwd_gpu_tensorcore(const ladder_memeff_problem *p, const ladder_memeff_args *a);
ladder_status memeff_bwd_gpu_tensorcore(const ladder_memeff_problem *p, const ladder_memeff_args *a);

/**
 * The bias as every rung reads it: element (b, h, i, j) of the broadcast [B,Hq,Sq,Sk] bias is
 * data[b*s[0] + h*s[1] + i*s[2] + j*s[3]], the stride being 0 on each dimension of size 1, so that no rung
 * special-cases a broadcast shape. data NULL: no bias (S gets nothing added).
 */
typedef struct memeff_bias {
    const void *data; /**< the bias's first element (host or device memory, the rung's dtype); NULL: none */
    int64_t s[4];     /**< strides over b, h, i, j in elements; 0 where the bias broadcasts */
} memeff_bias;

/** args->bias as ::memeff_bias (data NULL when absent). */
memeff_bias memeff_bias_of(const ladder_memeff_args *a);

#ifdef __cplusplus
}
#endif
#endif
