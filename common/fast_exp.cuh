/**
 * @file fast_exp.cuh
 * @brief The exponential as the tensor-core kernels take it: the ex2 instruction alone.
 *
 * exp2f compiles to ex2.approx plus a guard against subnormal results (a compare and two multiplies), __expf to
 * five instructions around its ex2, expf to about eight: under --use_fast_math, as FlashAttention is built, exp2f
 * becomes ex2.approx.ftz alone. The kernels that call these take exponentials of weights at most 1 (a softmax
 * probability, a decay over steps) that multiply values of order one, where a result below 2^-126, flushed to
 * zero here, adds nothing that fp32 keeps. The profiles that showed the guards' instructions are in chapters 2
 * and 3.
 */
#ifndef LADDER_FAST_EXP_CUH
#define LADDER_FAST_EXP_CUH

/** log2(e): exp(x) = 2^(x log2(e)). */
#define LADDER_LOG2E 1.4426950408889634f

/** 2^x by the ex2 instruction alone, a result below 2^-126 flushed to zero. */
__device__ __forceinline__ float ladder_ex2_ftz(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/** exp(x) the same way: one multiply and the ex2. */
__device__ __forceinline__ float ladder_exp_ftz(float x) { return ladder_ex2_ftz(x * LADDER_LOG2E); }

#endif
