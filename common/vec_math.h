/**
 * @file vec_math.h
 * @brief Math that the cpu rung's vector loops can call: an exponential written as plain arithmetic.
 *
 * A call to the C library's expf() inside a loop keeps the loop scalar: the compiler cannot turn a call into a
 * vector instruction (glibc's vector versions are offered only under -ffast-math, which would also assume that no
 * value is ever infinite or NaN, and the rungs rely on -inf for masked scores). ladder_expf() is the same function
 * as arithmetic and selects, with no branch and no call, so that a loop marked `#pragma omp simd` computes 8 of them
 * per instruction (with AVX2). It is Cephes' single-precision exponential (S. Moshier), about one unit in the last
 * place from the true value over the normal range.
 */
#ifndef LADDER_VEC_MATH_H
#define LADDER_VEC_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/**
 * e^x for a float: x = n ln 2 + r with n an integer and |r| <= ln 2 / 2, e^r by a degree-6 polynomial, times 2^n
 * built in the exponent bits. 0 below -87.33 (where e^x leaves the normal floats: no subnormal results), +inf above
 * 88.72, and NaN for NaN; e^-inf = 0 and e^+inf = +inf.
 */
static inline float ladder_expf(float x) {
    const float lo = -87.336544f, hi = 88.722839f; /* ln of the smallest normal float, ln of the largest float */
    const float xc = x < lo ? lo : x > hi ? hi : x; /* NaN passes through both compares */
    const float magic = 12582912.0f;                /* 1.5 * 2^23: adding and subtracting it rounds to an integer */
    const float n = (xc * 1.44269504088896341f + magic) - magic;
    float r = xc - n * 0.693359375f; /* ln 2 in two parts, so that n ln 2 is subtracted exactly */
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t bits = ((int32_t)(x == x ? n : 0.0f) + 127) << 23; /* 2^n; n in [-126, 128] */
    float two_n;
    memcpy(&two_n, &bits, sizeof two_n);
    const float y = n > 127.0f ? p * 2.0f * 1.7014118e38f : p * two_n; /* 2^128 is no float: 2 * 2^127 */
    return x != x ? x : x < lo ? 0.0f : x > hi ? INFINITY : y;
}

#endif
