/*
 * chapters/labs/flex/lab1_alibi_sym.c: Lab 1, a new score mod with its gradient (CPU).
 *
 * Symmetric ALiBi penalises a key by its distance on either side, with one learnable slope per head:
 *     S = s - slopes[h] * |i - j|
 * Write the mod and its derivatives in the shape of common/flex_mods.h (ladder_flex_alibi and
 * ladder_flex_alibi_grad are the nearest model): dS/ds, and for read 0 the element of slopes it read (its flat
 * index) and dS/d(that element). Chapter 5's "Adding a mod" says how it would then be registered.
 * Check it:  make lab LAB=lab1_alibi_sym
 */
#include "lab.h"

float lab1_alibi_sym(float s, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i, int64_t j) {
    /* TODO(lab 1): subtract the head's slope times the distance between the query and the key */
    (void)e, (void)b, (void)h, (void)i, (void)j;
    return s;
}

ladder_flex_grad lab1_alibi_sym_grad(float s, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i, int64_t j) {
    /* TODO(lab 1): dS/ds, then read 0: which element of slopes the score read, and how S moves with it */
    (void)s, (void)e, (void)b, (void)h, (void)i, (void)j;
    return ladder_flex_grad_of(1.0f);
}
