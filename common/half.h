/**
 * @file half.h
 * @brief Host conversions between float and the 16-bit formats bf16 and fp16.
 *
 * float -> 16-bit rounds to nearest, ties to even; NaN stays NaN and
 * overflow becomes infinity, as the GPU's own conversions do.
 */
#ifndef LADDER_HALF_H
#define LADDER_HALF_H

#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** float -> bf16 bits. */
uint16_t ladder_f32_to_bf16(float f);
/** bf16 bits -> float (exact). */
float ladder_bf16_to_f32(uint16_t h);
/** float -> IEEE fp16 bits. */
uint16_t ladder_f32_to_f16(float f);
/** IEEE fp16 bits -> float (exact). */
float ladder_f16_to_f32(uint16_t h);

/** @p f rounded to @p to and back (bf16 or f16; any other dtype: @p f itself): what storing it in @p to keeps. */
float ladder_round_float(float f, ladder_dtype to);

#ifdef __cplusplus
}
#endif
#endif
