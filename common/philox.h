/**
 * @file philox.h
 * @brief Philox4x32-10, the counter-based generator behind dropout, written once for the CPU rung, the kernels
 *        and the oracle (gcc and nvcc), drawing exactly what curand's Philox draws.
 *
 * A counter-based generator has no state to carry: output n is a pure function of (key, n), so any thread can
 * jump straight to the elements it owns. Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1,
 * 2, 3", SC11) maps a 128-bit counter and a 64-bit key to four 32-bit words through ten rounds of two 32x32->64
 * multiplies and xors, bumping the key by the Weyl constants between rounds.
 *
 * The stream dropout reads is curand's (curand_init(seed, 0, offset) then skipahead, as PyTorch's memory-efficient
 * kernel does): the n-th 32-bit output is word n % 4 of philox(counter = n / 4 as a 128-bit integer whose high 64
 * bits are 0 (subsequence 0), key = seed), ladder_philox_output(). Element (b, h, i, j) of an attention problem
 * draws output philox_offset + ((b*Hq + h)*Sq + i)*Sk + j (ladder_dropout_counter()), turned into a float in
 * (0, 1] as curand_uniform does (ladder_philox_uniform()), and is kept when that float is > p
 * (ladder_dropout_keep()).
 */
#ifndef LADDER_PHILOX_H
#define LADDER_PHILOX_H

#include <stdbool.h>
#include <stdint.h>

#include "host_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Four 32-bit words: a Philox4x32 counter or output block. Word 0 is the least significant of a counter. */
typedef struct ladder_philox4 {
    uint32_t w[4]; /**< the words */
} ladder_philox4;

/** The Philox4x32 multipliers and the Weyl constants that bump the key (Random123's PHILOX_M4x32_*, _W32_*). */
#define LADDER_PHILOX_M0 0xD2511F53u
/** Second multiplier. */
#define LADDER_PHILOX_M1 0xCD9E8D57u
/** Key bump of key word 0 (the golden ratio). */
#define LADDER_PHILOX_W0 0x9E3779B9u
/** Key bump of key word 1 (sqrt(3) - 1). */
#define LADDER_PHILOX_W1 0xBB67AE85u

/**
 * Philox4x32-10 of counter @p ctr under key (@p k0, @p k1): ten rounds, the key bumped between them. Each round
 * multiplies words 0 and 2 by M0 and M1 into 64-bit products, and the next block is (hi(M1*w2) ^ w1 ^ k0,
 * lo(M1*w2), hi(M0*w0) ^ w3 ^ k1, lo(M0*w0)), as Random123's philox4x32round.
 */
LADDER_HOST_DEVICE ladder_philox4 ladder_philox4x32_10(ladder_philox4 ctr, uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; round++) {
        if (round > 0) k0 += LADDER_PHILOX_W0, k1 += LADDER_PHILOX_W1;
        const uint64_t p0 = (uint64_t)LADDER_PHILOX_M0 * ctr.w[0], p1 = (uint64_t)LADDER_PHILOX_M1 * ctr.w[2];
        ladder_philox4 next;
        next.w[0] = (uint32_t)(p1 >> 32) ^ ctr.w[1] ^ k0;
        next.w[1] = (uint32_t)p1;
        next.w[2] = (uint32_t)(p0 >> 32) ^ ctr.w[3] ^ k1;
        next.w[3] = (uint32_t)p0;
        ctr = next;
    }
    return ctr;
}

/**
 * The four outputs n = 4*@p block .. 4*@p block + 3 of the stream keyed by @p seed (subsequence 0): Philox of the
 * counter @p block (high 64 bits 0), key (seed & 0xffffffff, seed >> 32) as curand_init sets it. A kernel that
 * draws four consecutive outputs calls this once.
 */
LADDER_HOST_DEVICE ladder_philox4 ladder_philox_block(uint64_t seed, uint64_t block) {
    ladder_philox4 ctr;
    ctr.w[0] = (uint32_t)block;
    ctr.w[1] = (uint32_t)(block >> 32);
    ctr.w[2] = 0;
    ctr.w[3] = 0;
    return ladder_philox4x32_10(ctr, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/** The @p n-th 32-bit output of the stream keyed by @p seed: word n % 4 of ladder_philox_block(seed, n / 4). */
LADDER_HOST_DEVICE uint32_t ladder_philox_output(uint64_t seed, uint64_t n) {
    return ladder_philox_block(seed, n / 4).w[n % 4];
}

/**
 * A 32-bit output as a float in (0, 1], computed in float32 as curand's _curand_uniform: x * 2^-32 + 2^-33 (x
 * rounded to float first; 0x1p-32f is curand's CURAND_2POW32_INV exactly, and the product is exact, so a fused
 * multiply-add gives the same float).
 */
LADDER_HOST_DEVICE float ladder_philox_uniform(uint32_t x) { return (float)x * 0x1p-32f + 0x1p-33f; }

/**
 * The Philox output that attention element (@p b, @p h, @p i, @p j) of a [B,Hq,Sq,Sk] problem draws:
 * @p offset + ((b*Hq + h)*Sq + i)*Sk + j, in 64 bits (the dispatcher makes sure offset + B*Hq*Sq*Sk fits).
 */
LADDER_HOST_DEVICE uint64_t ladder_dropout_counter(uint64_t offset, int64_t b, int64_t h, int64_t i, int64_t j,
                                                   int64_t Hq, int64_t Sq, int64_t Sk) {
    return offset + (((uint64_t)b * (uint64_t)Hq + (uint64_t)h) * (uint64_t)Sq + (uint64_t)i) * (uint64_t)Sk +
           (uint64_t)j;
}

/** Is the element drawing output @p n kept under dropout probability @p p? uniform(output) > p, as PyTorch. */
LADDER_HOST_DEVICE bool ladder_dropout_keep(uint64_t seed, uint64_t n, float p) {
    return ladder_philox_uniform(ladder_philox_output(seed, n)) > p;
}

/**
 * The smallest 32-bit output that is kept under dropout probability @p p (0 <= p < 1): uniform(x) rises with x,
 * so uniform(x) > p exactly when x >= this threshold, and a kernel tests each element with one integer compare
 * instead of a conversion, a multiply-add and a float compare. Found by bisection on ladder_philox_uniform itself,
 * so that the two tests agree bit for bit (test_memeff_args.c checks them on both sides of the threshold).
 */
LADDER_HOST_DEVICE uint32_t ladder_dropout_keep_min(float p) {
    uint64_t lo = 0, hi = 0xFFFFFFFFu; /* uniform(hi) = 1 > p: the answer lies in [lo, hi] */
    while (lo < hi) {
        const uint64_t mid = (lo + hi) / 2;
        if (ladder_philox_uniform((uint32_t)mid) > p) hi = mid;
        else lo = mid + 1;
    }
    return (uint32_t)lo;
}

/** What a kept element is multiplied by: 1 / (1 - p), in float as the kernels compute it (p < 1). */
LADDER_HOST_DEVICE float ladder_dropout_scale(float p) { return 1.0f / (1.0f - p); }

#ifdef __cplusplus
}
#endif
#endif
