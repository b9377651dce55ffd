/**
 * @file rng.h
 * @brief The seeded input generator: the same seed gives the same inputs on every machine.
 *
 * splitmix64 for the bits, Box-Muller for normals. Values have a realistic
 * spread (never small integers, never zeros), so a wrong index or an
 * unwritten output cannot hide behind exact arithmetic.
 */
#ifndef LADDER_RNG_H
#define LADDER_RNG_H

#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Generator state. */
typedef struct ladder_rng {
    uint64_t state; /**< splitmix64 counter */
} ladder_rng;

/** Seed a generator. */
void ladder_rng_seed(ladder_rng *rng, uint64_t seed);
/** Next 64 random bits. */
uint64_t ladder_rng_next(ladder_rng *rng);
/** Uniform in (0, 1), never 0 or 1. */
double ladder_rng_uniform(ladder_rng *rng);
/** Standard normal. */
double ladder_rng_normal(ladder_rng *rng);
/** Fill every addressed element of a host float tensor with scale * N(0,1), in C order. */
void ladder_rng_fill_normal(ladder_rng *rng, ladder_tensor *t, double scale);

#ifdef __cplusplus
}
#endif
#endif
