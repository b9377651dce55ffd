/*
 * chapters/labs/dynconv/check_lab2_varlen.c: checks Lab 2 (lab2_varlen_test, a test of the packed forward).
 * Run:  make lab LAB=lab2_varlen      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * A test passes here when it accepts the two correct forwards below and rejects each of the six broken
 * ones. Every broken forward computes the right thing except in the one way its name says.
 */
#include <stdio.h>

#include "../labcheck.h"
#include "dynconv.h"
#include "lab.h"

static const char *const LAB = "lab2_varlen";

typedef enum {
    CORRECT,
    IGNORES_SEQUENCES,   /* windows run across sequence starts */
    ONE_TOKEN_BACK,      /* windows reach one token into the previous sequence */
    CUTS_FIRST_ONLY,     /* only the first token of a sequence has its window cut */
    STOPS_AT_EMPTY,      /* the walk over sequences ends at the first empty one */
    SKIPS_LAST,          /* the last sequence is never written */
    SHIFTS_CUT_WINDOW,   /* a cut window pairs weight w with the wrong token, with or without cu_seqlens */
    N_KINDS
} kind;

static const char *const what[N_KINDS] = {
    "a correct forward",
    "a forward whose windows run across sequence starts",
    "a forward whose windows reach one token into the previous sequence",
    "a forward that cuts only the first token's window of each sequence",
    "a forward that stops at the first empty sequence",
    "a forward that never writes the last sequence",
    "a forward that pairs the weights of a cut window with the wrong tokens (also with cu_seqlens == NULL)",
};

static kind current; /* which forward candidate() is, for this call of the student's test */

/* out[t,d] for tokens [t_lo, t_hi) of a row whose window may not reach before token start, as `current` does it */
static void tokens(int64_t t_lo, int64_t t_hi, int64_t start, int64_t D, int W, const float *x, const float *k,
                   float *out) {
    for (int64_t t = t_lo; t < t_hi; t++)
        for (int64_t d = 0; d < D; d++) {
            int64_t lo = start; /* the first token the window may read */
            if (current == IGNORES_SEQUENCES) lo = 0;
            if (current == ONE_TOKEN_BACK && lo > 0) lo--;
            if (current == CUTS_FIRST_ONLY && t > start) lo = 0;
            float acc = 0.0f;
            for (int w = 0; w < W; w++) {
                int64_t src = t + w - W + 1;
                if (src < lo) continue;
                int wk = w;
                if (current == SHIFTS_CUT_WINDOW) { /* counts taps from the first token read, not from t-W+1 */
                    int64_t first = t - W + 1 > lo ? t - W + 1 : lo;
                    wk = (int)(src - first);
                }
                acc += k[(t * D + d) * W + wk] * x[src * D + d];
            }
            out[t * D + d] = acc;
        }
}

static void candidate(int64_t T, int64_t D, int W, const float *x, const float *k, const int32_t *cu, int n_seqs,
                      float *out) {
    if (!cu) {
        kind was = current;
        if (current != SHIFTS_CUT_WINDOW) current = CORRECT; /* the other bugs live in the packed path only */
        tokens(0, T, 0, D, W, x, k, out);
        current = was;
        return;
    }
    for (int i = 0; i < n_seqs; i++) {
        if (current == STOPS_AT_EMPTY && cu[i] == cu[i + 1]) break;
        if (current == SKIPS_LAST && i == n_seqs - 1) break;
        tokens(cu[i], cu[i + 1], cu[i], D, W, x, k, out);
    }
}

/* The second correct forward: the library's cpu rung. */
static void library(int64_t T, int64_t D, int W, const float *x, const float *k, const int32_t *cu, int n_seqs,
                    float *out) {
    if (T == 0) return; /* nothing to write; the library takes T >= 1 */
    int64_t td[3] = {1, T, D}, tdw[4] = {1, T, D, W}, ncu[1] = {n_seqs + 1};
    ladder_dynconv_problem p = {1, T, D, W};
    ladder_dynconv_args a = {0};
    a.x = ladder_tensor_make((void *)x, LADDER_F32, 3, td);
    a.kernels = ladder_tensor_make((void *)k, LADDER_F32, 4, tdw);
    a.out = ladder_tensor_make(out, LADDER_F32, 3, td);
    if (cu) a.cu_seqlens = ladder_tensor_make((void *)cu, LADDER_I32, 1, ncu);
    labcheck_ok(LAB, ladder_dynconv_fwd(LADDER_RUNG_CPU, &p, &a), "the cpu rung's forward (called by your test)");
}

int main(void) {
    int wrong = 0;
    current = CORRECT;
    if (!lab2_varlen_test(library)) {
        printf("FAIL %s: your test rejected a correct forward (the library's cpu rung)\n", LAB);
        wrong++;
    }
    for (int c = 0; c < N_KINDS; c++) {
        current = (kind)c;
        bool accepted = lab2_varlen_test(candidate);
        if (c == CORRECT && !accepted) {
            printf("FAIL %s: your test rejected %s\n", LAB, what[c]);
            wrong++;
        } else if (c != CORRECT && accepted) {
            printf("FAIL %s: your test accepted %s\n", LAB, what[c]);
            wrong++;
        }
    }
    if (wrong) return LABCHECK_FAIL;
    printf("PASS %s: your test accepts the 2 correct forwards and rejects all %d broken ones\n", LAB, N_KINDS - 1);
    return LABCHECK_PASS;
}
