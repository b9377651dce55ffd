#include "rng.h"

#include <math.h>

void ladder_rng_seed(ladder_rng *rng, uint64_t seed) { rng->state = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull; }

uint64_t ladder_rng_next(ladder_rng *rng) {
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double ladder_rng_uniform(ladder_rng *rng) {
    /* 53 random bits, shifted half a step off zero */
    return ((double)(ladder_rng_next(rng) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double ladder_rng_normal(ladder_rng *rng) {
    double u1 = ladder_rng_uniform(rng), u2 = ladder_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void ladder_rng_fill_normal(ladder_rng *rng, ladder_tensor *t, double scale) {
    int64_t n = ladder_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) ladder_tensor_set(t, ladder_tensor_offset_of_flat(t, i), scale * ladder_rng_normal(rng));
}
