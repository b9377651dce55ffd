#include "half.h"

#include <string.h>

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t ladder_f32_to_bf16(float f) {
    uint32_t u = bits_of(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    /* round to nearest even: add 0x7fff plus the lowest kept bit, then truncate */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float ladder_bf16_to_f32(uint16_t h) { return float_of((uint32_t)h << 16); }

uint16_t ladder_f32_to_f16(float f) {
    uint32_t u = bits_of(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t mag = u & 0x7fffffffu;
    if (mag > 0x7f800000u) return sign | 0x7e00u;          /* NaN */
    if (mag >= 0x477ff000u) return sign | 0x7c00u;         /* rounds past 65504: infinity */
    if (mag >= 0x38800000u) {                              /* normal fp16 */
        uint32_t r = mag - 0x38000000u;                    /* rebias exponent 127 -> 15 */
        r += 0xfffu + ((r >> 13) & 1u);                    /* round to nearest even */
        return sign | (uint16_t)(r >> 13);
    }
    if (mag < 0x33000000u) return sign;                    /* below half the smallest subnormal */
    /* subnormal fp16: shift the full mantissa right, rounding to nearest even */
    uint32_t exp = mag >> 23;
    uint32_t mant = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp; /* value = mant * 2^(exp-150) = (mant >> shift) * 2^-24 */
    uint32_t kept = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (kept & 1u))) kept++;
    return sign | (uint16_t)kept;
}

float ladder_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) return float_of(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) return float_of(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) return float_of(sign);
    /* subnormal: value = mant * 2^-24 */
    float v = (float)mant * (1.0f / 16777216.0f);
    return sign ? -v : v;
}

float ladder_round_float(float f, ladder_dtype to) {
    if (to == LADDER_BF16) return ladder_bf16_to_f32(ladder_f32_to_bf16(f));
    if (to == LADDER_F16) return ladder_f16_to_f32(ladder_f32_to_f16(f));
    return f;
}
