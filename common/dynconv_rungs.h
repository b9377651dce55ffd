/**
 * @file dynconv_rungs.h
 * @brief Internal: the dynconv rung functions behind ladder_dynconv_fwd/bwd.
 *
 * One signature at every rung. They assume the dispatcher validated the input
 * (shapes, W, dtypes, cu_seqlens); call the dispatchers, not these.
 */
#ifndef LADDER_DYNCONV_RUNGS_H
#define LADDER_DYNCONV_RUNGS_H

#include "dynconv.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Signature shared by every dynconv rung function. */
typedef ladder_status (*dynconv_fn)(const ladder_dynconv_problem *p, const ladder_dynconv_args *a);

/** The rung functions by ::ladder_rung (NULL where a rung was not built): the dispatcher's table. */
extern const dynconv_fn dynconv_fwd_rungs[LADDER_RUNG_COUNT];
/** The backward's table. */
extern const dynconv_fn dynconv_bwd_rungs[LADDER_RUNG_COUNT];

ladder_status dynconv_fwd_cpu(const ladder_dynconv_problem *p, const ladder_dynconv_args *a);
ladder_status dynconv_bwd_cpu(const ladder_dynconv_problem *p, const ladder_dynconv_args *a);
ladder_status dynconv_fwd_gpu_naive(const ladder_dynconv_problem *p, const ladder_dynconv_args *a);
ladder_status dynconv_bwd_gpu_naive(const ladder_dynconv_problem *p, const ladder_dynconv_args *a);
ladder_status dynconv_fwd_gpu_tiled(const ladder_dynconv_problem *p, const ladder_dynconv_args *a);
ladder_status dynconv_bwd_gpu_tiled(const ladder_dynconv_problem *p, const ladder_dynconv_args *a);
ladder_status dynconv_fwd_gpu_tensorcore(const ladder_dynconv_problem *p, const ladder_dynconv_args *a);
ladder_status dynconv_bwd_gpu_tensorcore(const ladder_dynconv_problem *p, const ladder_dynconv_args *a);

#ifdef __cplusplus
}
#endif
#endif
