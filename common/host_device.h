/**
 * @file host_device.h
 * @brief LADDER_HOST_DEVICE: how a helper that both gcc and nvcc compile is declared.
 *
 * What the CPU rung and the kernels must compute identically (sequence bounds,
 * later the mask predicates and Philox) is written once, in a header that
 * declares its functions with this macro.
 */
#ifndef LADDER_HOST_DEVICE_H
#define LADDER_HOST_DEVICE_H

/**
 * @def LADDER_HOST_DEVICE
 * `__host__ __device__ inline` under nvcc, so that kernels call the helper
 * too, and `static inline` in C.
 */
#ifdef __CUDACC__
#define LADDER_HOST_DEVICE __host__ __device__ inline
#else
#define LADDER_HOST_DEVICE static inline
#endif

/**
 * @def LADDER_CONSTEXPR
 * `constexpr` under C++, so that a kernel's template can ask such a helper at
 * compile time (which score mods are additive); nothing in C.
 */
#ifdef __cplusplus
#define LADDER_CONSTEXPR constexpr
#else
#define LADDER_CONSTEXPR
#endif

#endif
