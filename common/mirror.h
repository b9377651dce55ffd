/**
 * @file mirror.h
 * @brief Run a GPU rung on host tensors: swap each argument for a device mirror, then swap back.
 *
 * Tests and the `ladder` program hold host tensors; the GPU rungs take device
 * pointers. ladder_mirror_begin() replaces each listed descriptor (in place,
 * inside the caller's args struct) with a device copy: inputs are uploaded
 * with their strides, outputs are allocated contiguous and poisoned with NaN.
 * ladder_mirror_end() copies the outputs back into the original host
 * tensors, frees the device memory and restores the descriptors.
 */
#ifndef LADDER_MIRROR_H
#define LADDER_MIRROR_H

#include <stdbool.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most tensors one call can mirror. */
#define LADDER_MIRROR_MAX 32

/** The swapped descriptors and the host originals. */
typedef struct ladder_mirror {
    int n;                                   /**< descriptors swapped so far */
    int n_in;                                /**< the first n_in are inputs */
    ladder_tensor *slot[LADDER_MIRROR_MAX];  /**< where each descriptor lives in the caller's struct */
    ladder_tensor host[LADDER_MIRROR_MAX];   /**< the host descriptor that was there */
} ladder_mirror;

/**
 * Mirror @p ins (absent ones, data NULL, stay absent) and @p outs (host
 * tensors allocated by the caller, contiguous) to the device. On failure
 * everything is restored and freed.
 */
ladder_status ladder_mirror_begin(ladder_mirror *m, ladder_tensor *const *ins, int n_in, ladder_tensor *const *outs,
                                  int n_out);

/** Copy outputs back when @p download, free device memory, restore the host descriptors. */
ladder_status ladder_mirror_end(ladder_mirror *m, bool download);

#ifdef __cplusplus
}
#endif
#endif
