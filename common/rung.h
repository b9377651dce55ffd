/**
 * @file rung.h
 * @brief The four rungs every algorithm is built at.
 */
#ifndef LADDER_RUNG_H
#define LADDER_RUNG_H

#include <stdbool.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which implementation runs. CPU takes host pointers; the GPU rungs take device pointers. */
typedef enum ladder_rung {
    LADDER_RUNG_CPU = 0,          /**< cpu/: fp32, OpenMP, written to be read */
    LADDER_RUNG_GPU_NAIVE,        /**< gpu_naive/: fp32, one thread per output, global memory only */
    LADDER_RUNG_GPU_TILED,        /**< gpu_tiled/: fp32, shared-memory tiles */
    LADDER_RUNG_GPU_TENSORCORE,   /**< gpu_tensorcore/: bf16/fp16 in, fp32 accumulate, matrix units */
    LADDER_RUNG_COUNT             /**< how many rungs there are (not a rung) */
} ladder_rung;

/** Every rung, as a set of rungs with bit r for rung r (ladder_algo::bench_rungs). */
#define LADDER_RUNGS_ALL ((1u << LADDER_RUNG_COUNT) - 1)
/** The three GPU rungs, as a set of rungs. */
#define LADDER_RUNGS_GPU (LADDER_RUNGS_ALL & ~(1u << LADDER_RUNG_CPU))

/** "cpu", "gpu_naive", "gpu_tiled", "gpu_tensorcore". */
const char *ladder_rung_name(ladder_rung rung);
/** Parse a rung name; LADDER_ERR_ARG naming the valid ones otherwise. */
ladder_status ladder_rung_parse(const char *name, ladder_rung *rung);
/** True for the rungs that take device pointers. */
bool ladder_rung_is_gpu(ladder_rung rung);
/**
 * LADDER_OK when @p rung can run here; LADDER_ERR_UNAVAILABLE with the reason
 * (not built: no nvcc; or no CUDA GPU found) otherwise.
 */
ladder_status ladder_rung_available(ladder_rung rung);

#ifdef __cplusplus
}
#endif
#endif
