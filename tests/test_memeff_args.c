/*
 * tests/test_memeff_args.c: the bad input only memeff has, through ladder_memeff_fwd/bwd: a bias that does not
 * broadcast, dropout p outside [0, 1), a Philox counter that would wrap, splits out of range, dbias without a bias,
 * of the wrong shape, strided or overlapping; plus the data-pointer alignment every dispatcher now checks. And
 * Philox4x32-10 itself against the published known answers. What every algorithm shares (missing tensors, shapes,
 * strides, contiguity, overlap, ranges, rungs) is tests/test_args.c's.
 *
 * Each case asserts the status from DESIGN.md's table, that ladder_last_error() names the argument, and that
 * nothing was written (the outputs stay NaN).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "engine.h"
#include "memeff.h"
#include "philox.h"

extern const ladder_algo ladder_memeff_algo;

/* A valid case with a full bias and dropout, and its NaN outputs; p and a hold (possibly altered) copies. */
static ladder_case c;
static ladder_memeff_problem p;
static ladder_memeff_args a;
enum { N_OUTS = 6 };
static const char *const out_names[N_OUTS] = {"o", "lse", "dq", "dk", "dv", "dbias"};
static ladder_tensor outs[N_OUTS];

static ladder_tensor *field(ladder_memeff_args *args, const char *name) {
    const int i = ladder_algo_tensor(&ladder_memeff_algo, name);
    return (ladder_tensor *)((char *)args + ladder_memeff_algo.tensors[i].offset);
}

static void setup(void) {
    ladder_memeff_problem base = {.attn = {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 5, .Sk = 7, .D = 8, .Dv = 4,
                                           .mask = {.causal = 1, .window_left = -1, .window_right = -1}},
                                  .dropout_p = 0.25, .philox_seed = 7, .philox_offset = 11};
    ladder_case_opts o = {.seed = 3, .with = 1u << ladder_algo_tensor(&ladder_memeff_algo, "bias")};
    cr_assert_eq(ladder_case_make(&c, &ladder_memeff_algo, &base, &o), LADDER_OK, "%s", ladder_last_error());
    memcpy(&p, c.problem, sizeof p);
    memset(&a, 0, sizeof a);
    for (int i = 0; i < ladder_memeff_algo.n_tensors; i++)
        if (c.t[i].data) *(ladder_tensor *)((char *)&a + ladder_memeff_algo.tensors[i].offset) = c.t[i];
    for (int i = 0; i < N_OUTS; i++) {
        int64_t shape[LADDER_MAX_RANK];
        const int rank = ladder_case_shape(&c, ladder_algo_tensor(&ladder_memeff_algo, out_names[i]), shape);
        cr_assert_eq(ladder_tensor_alloc(&outs[i], LADDER_F32, rank, shape), LADDER_OK);
        ladder_tensor_poison(&outs[i]);
        *field(&a, out_names[i]) = outs[i];
    }
}

static void teardown(void) {
    for (int i = 0; i < N_OUTS; i++) ladder_tensor_free(&outs[i]);
    ladder_case_free(&c);
}

TestSuite(memeff_args, .init = setup, .fini = teardown);

static void expect_status(const char *call, ladder_status got, ladder_status want, const char *needle) {
    cr_assert_eq(got, want, "%s returned %s, expected %s (message: \"%s\")", call, ladder_status_name(got),
                 ladder_status_name(want), ladder_last_error());
    cr_assert(strstr(ladder_last_error(), needle), "%s: the message \"%s\" does not name \"%s\"", call,
              ladder_last_error(), needle);
    for (int i = 0; i < N_OUTS; i++)
        for (int64_t j = 0; j < ladder_tensor_numel(&outs[i]); j++)
            cr_assert(isnan(ladder_tensor_get(&outs[i], j)), "%s failed but wrote %s[%lld]", call, out_names[i],
                      (long long)j);
}

static void fwd_fails(ladder_status want, const char *needle) {
    expect_status("ladder_memeff_fwd(cpu)", ladder_memeff_fwd(LADDER_RUNG_CPU, &p, &a), want, needle);
}

static void bwd_fails(ladder_status want, const char *needle) {
    expect_status("ladder_memeff_bwd(cpu)", ladder_memeff_bwd(LADDER_RUNG_CPU, &p, &a), want, needle);
}

static void both_fail(ladder_status want, const char *needle) {
    fwd_fails(want, needle);
    bwd_fails(want, needle);
}

Test(memeff_args, the_valid_case_runs) {
    cr_assert_eq(ladder_memeff_fwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    cr_assert_eq(ladder_memeff_bwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
}

Test(memeff_args, a_bias_that_does_not_broadcast) {
    a.bias.shape[1] = 3; /* neither Hq = 4 nor 1; smaller, so still inside its allocation */
    both_fail(LADDER_ERR_SHAPE, "bias has shape [2,3,5,7] but must broadcast to [2,4,5,7]");
    a.bias.shape[1] = 4;
    a.bias.rank = 3;
    both_fail(LADDER_ERR_SHAPE, "bias has shape [2,4,5] but must have rank 4");
}

Test(memeff_args, broadcast_biases_are_taken) {
    /* [1,4,5,7], [2,1,1,7], [1,1,5,7] (the first rows of the full bias), and a stride-0 view of one [7] vector */
    const int64_t shapes[3][4] = {{1, 4, 5, 7}, {2, 1, 1, 7}, {1, 1, 5, 7}};
    const ladder_tensor full = a.bias;
    for (int s = 0; s < 3; s++) {
        a.bias = full;
        memcpy(a.bias.shape, shapes[s], sizeof shapes[s]);
        a.dbias = ladder_tensor_make(outs[5].data, LADDER_F32, 4, shapes[s]);
        cr_assert_eq(ladder_memeff_fwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
        cr_assert_eq(ladder_memeff_bwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    }
    a.bias = full;
    a.bias.strides[0] = a.bias.strides[1] = a.bias.strides[2] = 0;
    a.dbias = outs[5];
    cr_assert_eq(ladder_memeff_fwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    cr_assert_eq(ladder_memeff_bwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
}

Test(memeff_args, dropout_outside_0_1) {
    const double bad[] = {-0.1, 1.0, 1.5, NAN, 1.0 - 1e-12 /* below 1, but 1 as a float */};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p.dropout_p = bad[i];
        both_fail(LADDER_ERR_ARG, "dropout_p is");
    }
}

Test(memeff_args, a_philox_counter_that_would_wrap) {
    /* the last element draws output offset + B*Hq*Sq*Sk - 1 = offset + 279: past 2^64 - 1 it would wrap */
    p.philox_offset = UINT64_MAX - 100;
    both_fail(LADDER_ERR_ARG, "philox_offset is 18446744073709551515");
    p.philox_offset = UINT64_MAX - 280; /* the last output drawn is UINT64_MAX - 1: fits */
    cr_assert_eq(ladder_memeff_fwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    p.dropout_p = 0; /* without dropout no counter is drawn, so any offset is taken */
    p.philox_offset = UINT64_MAX;
    cr_assert_eq(ladder_memeff_fwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
}

Test(memeff_args, splits_out_of_range) {
    p.splits = -1;
    both_fail(LADDER_ERR_ARG, "splits is -1");
    p.splits = 8; /* more than Sk = 7 keys */
    both_fail(LADDER_ERR_ARG, "splits is 8 but must be in 0..Sk = 7");
}

Test(memeff_args, dbias_without_bias) {
    a.bias = (ladder_tensor){0};
    bwd_fails(LADDER_ERR_ARG, "dbias is given but bias is not");
}

Test(memeff_args, dbias_of_the_wrong_shape_or_layout) {
    a.dbias.shape[3] = 6;
    bwd_fails(LADDER_ERR_SHAPE, "dbias has shape [2,4,5,6] but the problem needs [2,4,5,7]");
    a.dbias = outs[5];
    a.dbias.strides[2] = 1, a.dbias.strides[3] = 5; /* the same bytes, its last two dimensions transposed */
    bwd_fails(LADDER_ERR_UNSUPPORTED, "dbias is an output and must be contiguous");
}

Test(memeff_args, dbias_overlapping_the_bias) {
    a.dbias.data = a.bias.data;
    bwd_fails(LADDER_ERR_ARG, "dbias overlaps bias");
}

Test(memeff_args, the_bias_takes_the_rungs_dtype) {
    a.bias.dtype = LADDER_F16;
    both_fail(LADDER_ERR_UNSUPPORTED, "rung cpu takes bias as f32, not f16");
}

Test(memeff_args, misaligned_data_pointers_are_refused) {
    a.bias.data = (char *)a.bias.data + 2;
    both_fail(LADDER_ERR_ARG, "bias's data pointer");
    a.bias = c.t[ladder_algo_tensor(&ladder_memeff_algo, "bias")];
    a.q.data = (char *)a.q.data + 1;
    both_fail(LADDER_ERR_ARG, "q's data pointer");
}

/*
 * Philox4x32-10 against the known-answer vectors Random123 publishes (tests/kat_vectors of
 * https://github.com/DEShawResearch/random123, the three "philox4x32 10" lines: counter words, key words, the
 * four output words), which curand's Philox4_32_10 reproduces.
 */
Test(philox, known_answers) {
    static const struct {
        uint32_t ctr[4], key[2], want[4];
    } kat[] = {
        {{0x00000000, 0x00000000, 0x00000000, 0x00000000}, {0x00000000, 0x00000000},
         {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t v = 0; v < sizeof kat / sizeof kat[0]; v++) {
        ladder_philox4 ctr;
        memcpy(ctr.w, kat[v].ctr, sizeof ctr.w);
        const ladder_philox4 got = ladder_philox4x32_10(ctr, kat[v].key[0], kat[v].key[1]);
        for (int w = 0; w < 4; w++)
            cr_assert_eq(got.w[w], kat[v].want[w], "vector %zu word %d: got %08x, want %08x", v, w, got.w[w],
                         kat[v].want[w]);
    }
}

Test(philox, the_nth_output_is_a_word_of_counter_n_over_4) {
    /* key (seed low, seed high) and counter n/4 in the low 64 bits, as curand_init(seed, 0, n) then curand() */
    const uint64_t seed = 0xa4093822299f31d0ull, ns[] = {0, 1, 2, 3, 4, 4294967295ull, 4294967296ull * 4 + 2,
                                                         0x0123456789abcdefull};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        const uint64_t n = ns[i];
        ladder_philox4 ctr = {{(uint32_t)(n / 4), (uint32_t)(n / 4 >> 32), 0, 0}};
        const ladder_philox4 block = ladder_philox4x32_10(ctr, (uint32_t)seed, (uint32_t)(seed >> 32));
        cr_assert_eq(ladder_philox_output(seed, n), block.w[n % 4], "output %llu", (unsigned long long)n);
    }
}

Test(philox, uniform_is_curands) {
    /* x * 2^-32 + 2^-33 in float: never 0, and 1 at the top (x rounds to 2^32 as a float) */
    cr_assert_eq(ladder_philox_uniform(0), 0x1p-33f);
    cr_assert_eq(ladder_philox_uniform(1), 0x1p-32f + 0x1p-33f);
    cr_assert_eq(ladder_philox_uniform(0xffffffffu), 1.0f);
    cr_assert_eq(ladder_philox_uniform(0x80000000u), 0.5f + 0x1p-33f);
    /* the keep predicate is uniform > p: p = 0 keeps all, and the uniform float's edge decides */
    cr_assert(ladder_dropout_keep(1, 2, 0.0f));
    const float u = ladder_philox_uniform(ladder_philox_output(1, 2));
    cr_assert(!ladder_dropout_keep(1, 2, u) && ladder_dropout_keep(1, 2, nextafterf(u, 0.0f)));
}

Test(philox, the_keep_threshold_agrees_with_the_float_test) {
    /* x >= keep_min(p) exactly when uniform(x) > p: at the threshold and its neighbour, at the ends of the range,
     * and on a sweep of outputs, for p at its edges and at float values between (p = a uniform itself included) */
    const float ps[] = {0.0f, 0x1p-33f, 1e-9f, 0.1f, 0.5f, ladder_philox_uniform(123456789u), 0.999f,
                        nextafterf(1.0f, 0.0f)};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        const float p = ps[i];
        const uint32_t t = ladder_dropout_keep_min(p);
        cr_assert(ladder_philox_uniform(t) > p, "p = %a: the threshold %u is kept", (double)p, t);
        if (t > 0) cr_assert(!(ladder_philox_uniform(t - 1) > p), "p = %a: %u below the threshold is dropped", (double)p, t);
        for (uint64_t x = 0; x <= 0xffffffffu; x += 0x10001u * 257u)
            cr_assert_eq(x >= t, ladder_philox_uniform((uint32_t)x) > p, "p = %a, x = %llu", (double)p,
                         (unsigned long long)x);
    }
    cr_assert_eq(ladder_dropout_keep_min(0.0f), 0u); /* p = 0 keeps every element */
}

Test(philox, the_dropout_counter_is_pytorchs_element_index) {
    /* offset + ((b*Hq + h)*Sq + i)*Sk + j, in 64 bits: no wrap at 2^32 elements */
    cr_assert_eq(ladder_dropout_counter(5, 1, 2, 3, 4, 6, 7, 8), 5u + ((1u * 6 + 2) * 7 + 3) * 8 + 4);
    cr_assert_eq(ladder_dropout_counter(4294967290ull, 0, 0, 0, 9, 1, 1, 16), 4294967299ull);
    cr_assert_eq(ladder_dropout_counter(0, 3, 31, 65535, 65535, 32, 65536, 65536), 4ull * 32 * 65536 * 65536 - 1);
}
