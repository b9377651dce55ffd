/*
 * chapters/labs/flash/check_lab1_combine.c: checks Lab 1 (lab1_combine).
 * Run:  make lab LAB=lab1_combine      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * The cpu rung runs on the whole of k and v (the expected o and lse) and on each split of them (the parts);
 * one extra split saw no key at all (lse -inf, o 0), and on some shapes row 0 saw no key in any split (so the
 * expected row 0 is o = 0, lse = -inf).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../labcheck.h"
#include "flash.h"
#include "lab.h"

static const char *const LAB = "lab1_combine";
extern const ladder_algo ladder_flash_algo;

/* Sq, Sk, D, Dv, splits, whether row 0 sees no key in any split */
static const int64_t shapes[][6] = {
    {1, 1, 8, 8, 1, 0}, {5, 37, 16, 8, 3, 0}, {64, 200, 32, 32, 4, 1}, {33, 7, 3, 5, 7, 1}, {128, 128, 64, 16, 2, 0},
};

static bool check_one(int n) {
    const int64_t *sh = shapes[n], Sq = sh[0], Sk = sh[1], D = sh[2], Dv = sh[3], splits = sh[4];
    ladder_flash_problem p = {.attn = {.B = 1, .Hq = 1, .Hkv = 1, .Sq = Sq, .Sk = Sk, .D = D, .Dv = Dv,
                                       .mask = LADDER_ATTN_NO_MASK}};
    ladder_case c;
    ladder_result ref;
    labcheck_case(LAB, &ladder_flash_algo, &p, 77 + (uint64_t)n, &c, &ref);
    const int64_t op[3] = {splits + 1, Sq, Dv}, lp[2] = {splits + 1, Sq}, os[2] = {Sq, Dv}, ls[1] = {Sq};
    ladder_tensor o_parts = labcheck_alloc(LADDER_F32, 3, op), lse_parts = labcheck_alloc(LADDER_F32, 2, lp);
    ladder_tensor o = labcheck_alloc(LADDER_F32, 2, os), lse = labcheck_alloc(LADDER_F32, 1, ls);
    for (int64_t s = 0; s <= splits; s++) {
        /* split s: keys [Sk*s/splits, Sk*(s+1)/splits), a view of k and v; the last split is empty */
        const int64_t j0 = s < splits ? Sk * s / splits : Sk, j1 = s < splits ? Sk * (s + 1) / splits : Sk;
        float *po = (float *)o_parts.data + s * Sq * Dv, *pl = (float *)lse_parts.data + s * Sq;
        if (j1 == j0) {
            for (int64_t i = 0; i < Sq; i++) pl[i] = -INFINITY;
            memset(po, 0, (size_t)(Sq * Dv) * sizeof(float));
            continue;
        }
        ladder_flash_problem part = p;
        part.attn.Sk = j1 - j0;
        ladder_flash_args a = {.q = *labcheck_tensor(&c, &ref, "q"), .k = *labcheck_tensor(&c, &ref, "k"),
                               .v = *labcheck_tensor(&c, &ref, "v")};
        a.k.shape[2] = a.v.shape[2] = j1 - j0;
        a.k.data = (float *)a.k.data + j0 * a.k.strides[2];
        a.v.data = (float *)a.v.data + j0 * a.v.strides[2];
        const int64_t o4[4] = {1, 1, Sq, Dv}, l3[3] = {1, 1, Sq};
        a.o = ladder_tensor_make(po, LADDER_F32, 4, o4);
        a.lse = ladder_tensor_make(pl, LADDER_F32, 3, l3);
        labcheck_ok(LAB, ladder_flash_fwd(LADDER_RUNG_CPU, &part, &a), "the cpu rung on a split");
    }
    ladder_tensor want_o = *labcheck_tensor(&c, &ref, "o"), want_l = *labcheck_tensor(&c, &ref, "lse");
    want_o.rank = 2, want_o.shape[0] = Sq, want_o.shape[1] = Dv, want_o.strides[0] = Dv, want_o.strides[1] = 1;
    want_l.rank = 1, want_l.shape[0] = Sq, want_l.strides[0] = 1;
    if (sh[5]) /* row 0 saw nothing anywhere: every part -inf and 0, and so is the answer */
        for (int64_t s = 0; s <= splits; s++) {
            ((float *)lse_parts.data)[s * Sq] = -INFINITY, ((float *)want_l.data)[0] = -INFINITY;
            for (int64_t e = 0; e < Dv; e++) ((float *)o_parts.data)[s * Sq * Dv + e] = ((float *)want_o.data)[e] = 0;
        }
    ladder_tensor_poison(&o);
    ladder_tensor_poison(&lse);
    lab1_combine(splits + 1, Sq, Dv, o_parts.data, lse_parts.data, o.data, lse.data);
    char shape[96];
    snprintf(shape, sizeof shape, "Sq=%lld Sk=%lld Dv=%lld splits=%lld", (long long)Sq, (long long)Sk, (long long)Dv,
             (long long)splits);
    bool ok = labcheck_compare(LAB, shape, "o", &o, &want_o) && labcheck_compare(LAB, shape, "lse", &lse, &want_l);
    ladder_tensor *all[] = {&o_parts, &lse_parts, &o, &lse};
    for (int i = 0; i < 4; i++) ladder_tensor_free(all[i]);
    ladder_result_free(&ref);
    ladder_case_free(&c);
    return ok;
}

int main(void) {
    const int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int i = 0; i < n; i++)
        if (!check_one(i)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, n);
}
