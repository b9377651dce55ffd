/**
 * @file recurrent_rungs.h
 * @brief Internal: the recurrent rung functions behind ladder_recurrent_fwd/bwd.
 *
 * One signature at every rung. They assume the dispatcher validated the input
 * (shapes, sizes, dtypes, cu_seqlens, which gradients are asked for); call the
 * dispatchers, not these.
 */
#ifndef LADDER_RECURRENT_RUNGS_H
#define LADDER_RECURRENT_RUNGS_H

#include "recurrent.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Signature shared by every recurrent rung function. */
typedef ladder_status (*recurrent_fn)(const ladder_recurrent_problem *p, const ladder_recurrent_args *a);

/** The rung functions by ::ladder_rung (NULL where a rung was not built): the dispatcher's table. */
extern const recurrent_fn recurrent_fwd_rungs[LADDER_RUNG_COUNT];
/** The backward's table. */
extern const recurrent_fn recurrent_bwd_rungs[LADDER_RUNG_COUNT];

ladder_status recurrent_fwd_cpu(const ladder_recurrent_problem *p, const ladder_recurrent_args *a);
ladder_status recurrent_bwd_cpu(const ladder_recurrent_problem *p, const ladder_recurrent_args *a);
ladder_status recurrent_fwd_gpu_naive(const ladder_recurrent_problem *p, const ladder_recurrent_args *a);
ladder_status recurrent_bwd_gpu_naive(const ladder_recurrent_problem *p, const ladder_recurrent_args *a);
ladder_status recurrent_fwd_gpu_tiled(const ladder_recurrent_problem *p, const ladder_recurrent_args *a);
ladder_status recurrent_bwd_gpu_tiled(const ladder_recurrent_problem *p, const ladder_recurrent_args *a);
ladder_status recurrent_fwd_gpu_tensorcore(const ladder_recurrent_problem *p, const ladder_recurrent_args *a);
ladder_status recurrent_bwd_gpu_tensorcore(const ladder_recurrent_problem *p, const ladder_recurrent_args *a);

#ifdef __cplusplus
}
#endif
#endif
