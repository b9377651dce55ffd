/*
 * tests/test_recurrent_args.c: the bad input only recurrent has, through its dispatchers. (What every
 * algorithm has, a missing or misshapen required tensor, sizes out of range, overlaps, dtypes at the fp32
 * rungs, is test_args.c's, from the descriptor.) Each case asserts the status, that the message names the
 * argument, and that nothing was written.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "recurrent.h"

extern const ladder_algo ladder_recurrent_algo;
static const ladder_algo *const A = &ladder_recurrent_algo;

/* A valid call with every optional tensor: B=2 T=5 H=2 K=3 V=4, outputs NaN. */
typedef struct fixture {
    ladder_case c;
    ladder_recurrent_problem p;
    ladder_recurrent_args a;
    ladder_tensor outs[LADDER_MAX_TENSORS];
} fixture;

static ladder_tensor *field(fixture *f, int i) { return (ladder_tensor *)((char *)&f->a + A->tensors[i].offset); }
static ladder_tensor *named(fixture *f, const char *name) { return field(f, ladder_algo_tensor(A, name)); }

static void setup(fixture *f, int64_t B, const int64_t *lens, int n_seqs) {
    memset(f, 0, sizeof *f);
    ladder_recurrent_problem p = {.B = B, .T = 5, .H = 2, .K = 3, .V = 4};
    ladder_case_opts o = {.seed = 3, .n_seqs = n_seqs};
    for (int i = 0; i < n_seqs; i++) o.seqlens[i] = lens[i];
    const char *optional[] = {"g", "g_gamma", "gk", "gv", "h0", "ht", "dht"};
    for (int i = 0; i < 7; i++) o.with |= 1u << ladder_algo_tensor(A, optional[i]);
    cr_assert_eq(ladder_case_make(&f->c, A, &p, &o), LADDER_OK, "%s", ladder_last_error());
    memcpy(&f->p, f->c.problem, sizeof f->p);
    const ladder_tensor *index = n_seqs ? &f->c.t[ladder_algo_tensor(A, "cu_seqlens")] : NULL;
    for (int i = 0; i < A->n_tensors; i++) {
        if (f->c.t[i].data) {
            *field(f, i) = f->c.t[i];
        } else if ((f->c.present >> i) & 1u) {
            int64_t shape[LADDER_MAX_RANK];
            int rank = ladder_tensor_shape_of(A, f->c.problem, index, i, shape);
            cr_assert_eq(ladder_tensor_alloc(&f->outs[i], LADDER_F32, rank, shape), LADDER_OK);
            ladder_tensor_poison(&f->outs[i]);
            *field(f, i) = f->outs[i];
        }
    }
}

static void teardown(fixture *f) {
    for (int i = 0; i < LADDER_MAX_TENSORS; i++) ladder_tensor_free(&f->outs[i]);
    ladder_case_free(&f->c);
}

/* Both passes fail with @p want naming @p needle, and no output was written. */
static void expect_failure(fixture *f, ladder_rung rung, int passes, ladder_status want, const char *needle) {
    for (int pass = 0; pass < 2; pass++) {
        if (!((passes >> pass) & 1)) continue;
        ladder_status got = pass ? ladder_recurrent_bwd(rung, &f->p, &f->a) : ladder_recurrent_fwd(rung, &f->p, &f->a);
        cr_assert_eq(got, want, "%s returned %s, expected %s (\"%s\")", pass ? "bwd" : "fwd", ladder_status_name(got),
                     ladder_status_name(want), ladder_last_error());
        cr_assert(strstr(ladder_last_error(), needle), "%s: the message \"%s\" does not name \"%s\"",
                  pass ? "bwd" : "fwd", ladder_last_error(), needle);
        for (int i = 0; i < A->n_tensors; i++)
            for (int64_t e = 0; f->outs[i].data && e < ladder_tensor_numel(&f->outs[i]); e++)
                cr_assert(isnan(ladder_tensor_get(&f->outs[i], e)), "a failed call wrote %s[%lld]", A->tensors[i].name,
                          (long long)e);
    }
}
enum { FWD = 1, BWD = 2, BOTH = 3 };

Test(recurrent_args, the_fixture_is_valid) {
    fixture f;
    setup(&f, 2, NULL, 0);
    cr_assert_eq(ladder_recurrent_fwd(LADDER_RUNG_CPU, &f.p, &f.a), LADDER_OK, "%s", ladder_last_error());
    cr_assert_eq(ladder_recurrent_bwd(LADDER_RUNG_CPU, &f.p, &f.a), LADDER_OK, "%s", ladder_last_error());
    teardown(&f);
}

/* The rungs multiply by the scale as a float: 1e39 is a finite double whose float is infinite (o would be NaN), and
 * 1e-50 a nonzero double whose float is 0 (o would be 0). */
Test(recurrent_args, a_scale_out_of_a_floats_range) {
    fixture f;
    setup(&f, 2, NULL, 0);
    const double bad[] = {NAN, INFINITY, -INFINITY, 1e39, -1e39, 1e-50, -1e-50};
    for (int i = 0; i < 7; i++) {
        f.p.scale = bad[i];
        expect_failure(&f, LADDER_RUNG_CPU, BOTH, LADDER_ERR_ARG, "scale is");
    }
    teardown(&f);
}

Test(recurrent_args, optional_tensors_of_the_wrong_shape) {
    const char *names[] = {"g", "g_gamma", "gk", "gv", "h0", "ht", "dht", "dg", "dg_gamma", "dgk", "dgv", "dh0"};
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        fixture f;
        setup(&f, 2, NULL, 0);
        ladder_tensor *t = named(&f, names[n]);
        bool bwd_only = names[n][0] == 'd';
        char needle[64];
        snprintf(needle, sizeof needle, "%s has shape", names[n]);
        t->shape[0] -= 1; /* a gate for fewer rows than q, a state for fewer sequences: still inside the allocation */
        expect_failure(&f, LADDER_RUNG_CPU, bwd_only ? BWD : strcmp(names[n], "ht") == 0 ? FWD : BOTH,
                       LADDER_ERR_SHAPE, needle);
        teardown(&f);
    }
}

Test(recurrent_args, a_gradient_exactly_when_its_input_is_given) {
    const char *pairs[][2] = {{"g", "dg"}, {"g_gamma", "dg_gamma"}, {"gk", "dgk"}, {"gv", "dgv"}, {"h0", "dh0"}};
    for (int i = 0; i < 5; i++) {
        fixture f;
        setup(&f, 2, NULL, 0);
        ladder_tensor keep = *named(&f, pairs[i][1]);
        named(&f, pairs[i][1])->data = NULL;
        expect_failure(&f, LADDER_RUNG_CPU, BWD, LADDER_ERR_ARG, pairs[i][1]);
        *named(&f, pairs[i][1]) = keep;
        named(&f, pairs[i][0])->data = NULL;
        expect_failure(&f, LADDER_RUNG_CPU, BWD, LADDER_ERR_ARG, pairs[i][1]);
        teardown(&f);
    }
}

Test(recurrent_args, cu_seqlens_rules) {
    fixture f;
    setup(&f, 1, (const int64_t[]){2, 0, 3}, 3);
    cr_assert_eq(ladder_recurrent_fwd(LADDER_RUNG_CPU, &f.p, &f.a), LADDER_OK, "%s", ladder_last_error());
    cr_assert_eq(ladder_recurrent_bwd(LADDER_RUNG_CPU, &f.p, &f.a), LADDER_OK, "%s", ladder_last_error());
    for (int i = 0; i < A->n_tensors; i++)
        if (f.outs[i].data) ladder_tensor_poison(&f.outs[i]);
    int32_t *cu = named(&f, "cu_seqlens")->data;
    cu[1] = 4; /* 0,4,2,5: out of order */
    expect_failure(&f, LADDER_RUNG_CPU, BOTH, LADDER_ERR_ARG, "cu_seqlens decreases");
    cu[1] = 2;
    cu[3] = 4; /* does not end at T */
    expect_failure(&f, LADDER_RUNG_CPU, BOTH, LADDER_ERR_ARG, "cu_seqlens ends at 4");
    cu[3] = 5;
    f.p.B = 2; /* packed sequences with B > 1 */
    expect_failure(&f, LADDER_RUNG_CPU, BOTH, LADDER_ERR_ARG, "cu_seqlens is given, so B must be 1");
    teardown(&f);
}

Test(recurrent_args, states_for_a_different_number_of_sequences) {
    fixture f;
    setup(&f, 1, (const int64_t[]){2, 0, 3}, 3); /* h0, ht, dht, dh0 are [3,H,K,V] */
    ladder_tensor *cu = named(&f, "cu_seqlens");
    cu->shape[0] = 3; /* [0,2,2]: two sequences, ending at 2 */
    expect_failure(&f, LADDER_RUNG_CPU, BOTH, LADDER_ERR_SHAPE, "h0 has shape");
    teardown(&f);
}

Test(recurrent_args, tensor_core_dtypes) {
    fixture f;
    setup(&f, 2, NULL, 0);
    for (int i = 0; i < A->n_tensors; i++) field(&f, i)->dtype = ladder_tensor_dtype_at(A, i, LADDER_BF16);
    named(&f, "k")->dtype = LADDER_F16; /* q is bf16: k must be too */
    expect_failure(&f, LADDER_RUNG_GPU_TENSORCORE, BOTH, LADDER_ERR_UNSUPPORTED,
                   "rung gpu_tensorcore takes k as bf16, not f16");
    named(&f, "k")->dtype = LADDER_BF16;
    named(&f, "gk")->dtype = LADDER_BF16; /* gates stay f32: a 16-bit log gate would lose the decay */
    expect_failure(&f, LADDER_RUNG_GPU_TENSORCORE, BOTH, LADDER_ERR_UNSUPPORTED,
                   "rung gpu_tensorcore takes gk as f32, not bf16");
    named(&f, "gk")->dtype = LADDER_F32;
    named(&f, "q")->dtype = LADDER_F32;
    expect_failure(&f, LADDER_RUNG_GPU_TENSORCORE, BOTH, LADDER_ERR_UNSUPPORTED,
                   "rung gpu_tensorcore takes q as bf16 or f16, not f32: recurrent has no f32");
    teardown(&f);
}
