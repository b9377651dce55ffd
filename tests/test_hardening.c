/*
 * tests/test_hardening.c: bad input that once got past the library's checks.
 *
 * Each class of fault is tested at its root, not through one example:
 *  - size arithmetic: every product and sum of sizes and strides is checked, whatever order the dimensions
 *    come in (before the fix, `make test SANITIZE=1` reported UBSan's signed overflow and out-of-bounds index
 *    in the tensor helpers, and an ASan buffer overflow in ladder_check_cu_seqlens);
 *  - outputs that share memory with an input or with another output;
 *  - public helpers given a rank outside 0..LADDER_MAX_RANK or a negative size.
 * The .npy side (ladder_npy_write's arguments, files that are not regular, strict headers) is in test_npy.c.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ladder.h"

#define BIG ((int64_t)1 << 62)

/* Assert @p got is @p want and that ladder_last_error() contains every non-NULL needle. */
static void expect(const char *call, ladder_status got, ladder_status want, const char *needle1, const char *needle2) {
    cr_assert_eq(got, want, "%s returned %s, expected %s (message: \"%s\")", call, ladder_status_name(got),
                 ladder_status_name(want), ladder_last_error());
    const char *needles[2] = {needle1, needle2};
    for (int i = 0; i < 2; i++)
        cr_assert(!needles[i] || strstr(ladder_last_error(), needles[i]), "%s: the message \"%s\" does not say \"%s\"",
                  call, ladder_last_error(), needles[i]);
}

static void shape_str(int rank, const int64_t *shape, char *buf, size_t n) {
    ladder_tensor t = ladder_tensor_make(NULL, LADDER_F32, rank, shape);
    ladder_tensor_shape_str(&t, buf, n);
}

/* ---- size arithmetic ----------------------------------------------------------------------------------------- */

/*
 * Shapes whose f32 byte size does not fit in int64, in every order of their dimensions. A zero size must not
 * hide the huge ones beside it: the C-order strides of [0, 2^62, 8] overflow although it has no element, so
 * NumPy refuses such shapes too.
 */
static const int64_t too_large[][3] = {
    {0, BIG, 8}, {BIG, 0, 8}, {BIG, 8, 0}, {0, 3037000500, 3037000500}, {BIG, 2, 1}, {0, (int64_t)1 << 61, 2},
};
#define N_TOO_LARGE (int)(sizeof too_large / sizeof too_large[0])

Test(hardening, shape_bytes_overflow_is_caught_in_any_order) {
    for (int i = 0; i < N_TOO_LARGE; i++) {
        char s[96];
        shape_str(3, too_large[i], s, sizeof s);
        int64_t got = ladder_shape_bytes(LADDER_F32, 3, too_large[i]);
        cr_assert_eq(got, -1, "ladder_shape_bytes(f32, %s) = %lld, expected -1 (does not fit in int64)", s,
                     (long long)got);
    }
}

Test(hardening, a_shape_too_large_to_address_is_an_invalid_descriptor) {
    float one;
    for (int i = 0; i < N_TOO_LARGE; i++) {
        char s[96];
        shape_str(3, too_large[i], s, sizeof s);
        ladder_tensor t = ladder_tensor_make(&one, LADDER_F32, 3, too_large[i]);
        cr_assert_eq(ladder_tensor_numel(&t), -1, "numel of %s must be -1 (invalid), not %lld", s,
                     (long long)ladder_tensor_numel(&t));
        cr_assert_eq(ladder_tensor_span(&t), -1, "span of %s must be -1 (invalid)", s);
        cr_assert(!ladder_tensor_is_contiguous(&t), "%s is invalid, so it is not contiguous", s);
        char call[128];
        snprintf(call, sizeof call, "ladder_check_tensor(x of shape %s)", s);
        expect(call, ladder_check_tensor(&t, "x", 3, too_large[i], "[A,B,C]"), LADDER_ERR_ARG, "x has shape",
               "too large to address");
    }
}

/* The dynconv fixture of test_dynconv_args.c, on the stack: B=2, T=5, D=3, W=4. */
static ladder_dynconv_problem p = {.B = 2, .T = 5, .D = 3, .W = 4};
static float x_mem[30], k_mem[120], out_mem[30];
static ladder_dynconv_args fwd_args(void) {
    int64_t btd[3] = {2, 5, 3}, btdw[4] = {2, 5, 3, 4};
    for (int i = 0; i < 30; i++) x_mem[i] = 0.25f * (float)i, out_mem[i] = NAN;
    for (int i = 0; i < 120; i++) k_mem[i] = 0.125f;
    return (ladder_dynconv_args){.x = ladder_tensor_make(x_mem, LADDER_F32, 3, btd),
                                 .kernels = ladder_tensor_make(k_mem, LADDER_F32, 4, btdw),
                                 .out = ladder_tensor_make(out_mem, LADDER_F32, 3, btd)};
}

static void expect_out_unwritten(const char *call) {
    for (int i = 0; i < 30; i++)
        cr_assert(isnan(out_mem[i]), "%s failed but wrote out[%d] = %g", call, i, out_mem[i]);
}

/*
 * Strides whose span overflows: in elements (a sum of products past int64) or only in bytes (x4 for f32), with
 * the huge stride in each position. Each was accepted, and the CPU rung read far outside x.
 */
static const int64_t huge_strides[][3] = {
    {BIG, 3, 1},                                 /* 1 + 2^62 + 14 elements: fits, but not x4 bytes */
    {15, BIG, 1},                                /* (5-1) * 2^62 elements */
    {15, 3, BIG},                                /* (3-1) * 2^62 elements */
    {BIG, (int64_t)1 << 61, 1},                  /* 2^62 + 4 * 2^61: each term fits, the sum does not */
    {INT64_MAX, 3, 1},                           /* the product itself */
    {(int64_t)1 << 60, (int64_t)1 << 60, 1},    /* 5 * 2^60 elements fit; 20 * 2^60 bytes do not */
};

Test(hardening, a_stride_whose_span_overflows_is_refused) {
    for (size_t i = 0; i < sizeof huge_strides / sizeof huge_strides[0]; i++) {
        ladder_dynconv_args a = fwd_args();
        memcpy(a.x.strides, huge_strides[i], sizeof huge_strides[i]);
        char call[160];
        snprintf(call, sizeof call, "ladder_dynconv_fwd(x with strides [%lld,%lld,%lld])",
                 (long long)huge_strides[i][0], (long long)huge_strides[i][1], (long long)huge_strides[i][2]);
        expect(call, ladder_dynconv_fwd(LADDER_RUNG_CPU, &p, &a), LADDER_ERR_ARG, "x has strides", "address");
        expect_out_unwritten(call);
    }
}

/* cu_seqlens [0, 5] (a single sequence of T = 5 tokens), declared as @p n entries long. */
static int32_t cu_mem[2] = {0, 5};
static ladder_tensor cu_of_length(int64_t n) {
    ladder_tensor cu = ladder_tensor_make(cu_mem, LADDER_I32, 1, (const int64_t[]){2});
    cu.shape[0] = n; /* a hand-built descriptor: ladder_tensor_make would refuse the size itself */
    return cu;
}

Test(hardening, cu_seqlens_with_an_enormous_length_is_refused_before_allocating) {
    /* n * 4 bytes wrapped to a tiny allocation (2^62 + 2 entries: 8 bytes) that the copy then overran */
    const int64_t lengths[] = {BIG + 2, (int64_t)1 << 61, INT64_MAX};
    for (int i = 0; i < 3; i++) {
        ladder_tensor cu = cu_of_length(lengths[i]);
        char call[96];
        snprintf(call, sizeof call, "ladder_check_cu_seqlens(shape [%lld])", (long long)lengths[i]);
        expect(call, ladder_check_cu_seqlens(&cu, 5, false), LADDER_ERR_ARG, "cu_seqlens", "too large to address");

        ladder_dynconv_problem one = {.B = 1, .T = 5, .D = 3, .W = 4};
        ladder_dynconv_args a = fwd_args();
        a.x.shape[0] = a.kernels.shape[0] = a.out.shape[0] = 1;
        a.cu_seqlens = cu;
        snprintf(call, sizeof call, "ladder_dynconv_fwd(cu_seqlens of shape [%lld])", (long long)lengths[i]);
        expect(call, ladder_dynconv_fwd(LADDER_RUNG_CPU, &one, &a), LADDER_ERR_ARG, "cu_seqlens", "too large");
        expect_out_unwritten(call);
    }
}

Test(hardening, numel_and_span_of_sizes_that_overflow_are_minus_one) {
    float one;
    ladder_tensor t = ladder_tensor_make(&one, LADDER_F32, 3, (const int64_t[]){2, 5, 3});
    t.shape[0] = BIG, t.shape[1] = 4; /* hand-built: 2^64 elements */
    cr_assert_eq(ladder_tensor_numel(&t), -1, "numel of [2^62,4,3] must be -1, not %lld",
                 (long long)ladder_tensor_numel(&t));
    cr_assert_eq(ladder_tensor_span(&t), -1, "span of [2^62,4,3] must be -1");
    cr_assert(!ladder_tensor_is_contiguous(&t), "[2^62,4,3] is invalid, so not contiguous");
}

Test(hardening, offsets_outside_the_tensor_are_minus_one) {
    float buf[30];
    ladder_tensor t = ladder_tensor_make(buf, LADDER_F32, 3, (const int64_t[]){2, 5, 3});
    cr_assert_eq(ladder_tensor_offset(&t, (const int64_t[]){1, 4, 2}), 29, "the last element of [2,5,3]");
    cr_assert_eq(ladder_tensor_offset(&t, (const int64_t[]){2, 0, 0}), -1, "index 2 is outside dimension 0 of size 2");
    cr_assert_eq(ladder_tensor_offset(&t, (const int64_t[]){0, -1, 0}), -1, "index -1 is outside dimension 1");
    cr_assert_eq(ladder_tensor_offset_of_flat(&t, 29), 29, "flat index 29 of [2,5,3]");
    cr_assert_eq(ladder_tensor_offset_of_flat(&t, 30), -1, "flat index 30 is past the 30 elements of [2,5,3]");
    cr_assert_eq(ladder_tensor_offset_of_flat(&t, -1), -1, "flat index -1");
    /* an empty tensor has no element to find (this divided by the zero size) */
    ladder_tensor empty = ladder_tensor_make(buf, LADDER_F32, 3, (const int64_t[]){2, 0, 3});
    cr_assert_eq(ladder_tensor_offset_of_flat(&empty, 0), -1, "an empty [2,0,3] has no flat index 0");
    cr_assert_eq(ladder_tensor_offset(&empty, (const int64_t[]){0, 0, 0}), -1, "an empty [2,0,3] has no [0,0,0]");
    /* in range, but the offset itself overflows: a hand-built stride */
    t.strides[0] = INT64_MAX;
    cr_assert_eq(ladder_tensor_offset(&t, (const int64_t[]){1, 1, 0}), -1, "INT64_MAX + 3 overflows");
    cr_assert_eq(ladder_tensor_offset_of_flat(&t, 15 + 3), -1, "INT64_MAX + 3 overflows");
}

/* ---- outputs that overlap inputs ----------------------------------------------------------------------------- */

/*
 * Every dynconv tensor in one arena, each in its own 256-float slot, so an output can be moved onto an input.
 * A refused call must leave the whole arena bitwise as it was.
 */
static float arena[8 * 256];
static float arena_before[8 * 256];
enum { X, KERNELS, OUT, DOUT, DX, DKERNELS, SPARE };
static ladder_dynconv_args arena_args(void) {
    for (int i = 0; i < 8 * 256; i++) arena[i] = (float)(i % 97) * 0.01f - 0.4f;
    int64_t btd[3] = {2, 5, 3}, btdw[4] = {2, 5, 3, 4};
    return (ladder_dynconv_args){
        .x = ladder_tensor_make(arena + X * 256, LADDER_F32, 3, btd),
        .kernels = ladder_tensor_make(arena + KERNELS * 256, LADDER_F32, 4, btdw),
        .out = ladder_tensor_make(arena + OUT * 256, LADDER_F32, 3, btd),
        .dout = ladder_tensor_make(arena + DOUT * 256, LADDER_F32, 3, btd),
        .dx = ladder_tensor_make(arena + DX * 256, LADDER_F32, 3, btd),
        .dkernels = ladder_tensor_make(arena + DKERNELS * 256, LADDER_F32, 4, btdw),
    };
}

/* The call is refused with LADDER_ERR_ARG naming both tensors, and nothing in the arena changed. */
static void expect_overlap(const char *call, bool bwd, const ladder_dynconv_args *a, const char *output,
                           const char *other) {
    memcpy(arena_before, arena, sizeof arena);
    ladder_status st = bwd ? ladder_dynconv_bwd(LADDER_RUNG_CPU, &p, a) : ladder_dynconv_fwd(LADDER_RUNG_CPU, &p, a);
    char want[96];
    snprintf(want, sizeof want, "%s overlaps %s", output, other);
    expect(call, st, LADDER_ERR_ARG, want, "must not share memory");
    for (int i = 0; i < 8 * 256; i++)
        cr_assert(memcmp(&arena[i], &arena_before[i], sizeof(float)) == 0, "%s was refused but changed arena[%d]",
                  call, i);
}

Test(hardening, separate_and_adjacent_tensors_are_fine) {
    ladder_dynconv_args a = arena_args();
    cr_assert_eq(ladder_dynconv_fwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    cr_assert_eq(ladder_dynconv_bwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    a.out.data = arena + X * 256 + 30; /* starts right after x's last element */
    cr_assert_eq(ladder_dynconv_fwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "out right after x: %s", ladder_last_error());
    a.dx.data = arena + DKERNELS * 256 + 120; /* right after dkernels */
    cr_assert_eq(ladder_dynconv_bwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "dx right after dkernels: %s",
                 ladder_last_error());
}

Test(hardening, an_output_overlapping_an_input_is_refused) {
    ladder_dynconv_args a = arena_args();
    a.out.data = a.x.data; /* in place: returned LADDER_OK with a wrong answer */
    expect_overlap("ladder_dynconv_fwd(out = x)", false, &a, "out", "x");
    a = arena_args();
    a.out.data = arena + X * 256 + 29; /* shares x's last element only */
    expect_overlap("ladder_dynconv_fwd(out from x's last element)", false, &a, "out", "x");
    a = arena_args();
    a.out.data = arena + KERNELS * 256 + 100;
    expect_overlap("ladder_dynconv_fwd(out inside kernels)", false, &a, "out", "kernels");
    a = arena_args();
    a.dx.data = a.dout.data;
    expect_overlap("ladder_dynconv_bwd(dx = dout)", true, &a, "dx", "dout");
    a = arena_args();
    a.dkernels.data = arena + KERNELS * 256 + 1;
    expect_overlap("ladder_dynconv_bwd(dkernels inside kernels)", true, &a, "dkernels", "kernels");
    a = arena_args();
    a.x.data = arena + SPARE * 256; /* a strided x [2,5,3] with strides [40,8,2] spans 77 floats */
    a.x.strides[0] = 40, a.x.strides[1] = 8, a.x.strides[2] = 2;
    a.dkernels.data = arena + SPARE * 256 + 76; /* from x's last element on */
    expect_overlap("ladder_dynconv_bwd(dkernels from a strided x's last element)", true, &a, "dkernels", "x");
}

Test(hardening, outputs_overlapping_each_other_are_refused) {
    ladder_dynconv_args a = arena_args();
    a.dx.data = arena + DKERNELS * 256 + 100; /* the last 20 floats of dkernels */
    expect_overlap("ladder_dynconv_bwd(dx inside dkernels)", true, &a, "dx", "dkernels");
}

Test(hardening, an_output_overlapping_cu_seqlens_is_refused) {
    ladder_dynconv_problem one = {.B = 1, .T = 5, .D = 3, .W = 4};
    ladder_dynconv_args a = arena_args();
    ladder_tensor *ts[] = {&a.x, &a.kernels, &a.out, &a.dout, &a.dx, &a.dkernels};
    for (int i = 0; i < 6; i++) ts[i]->shape[0] = 1;
    int32_t cu[2] = {0, 5};
    memcpy(arena + SPARE * 256, cu, sizeof cu); /* cu_seqlens where dx will be written */
    a.cu_seqlens = ladder_tensor_make(arena + SPARE * 256, LADDER_I32, 1, (const int64_t[]){2});
    a.dx.data = arena + SPARE * 256;
    memcpy(arena_before, arena, sizeof arena);
    expect("ladder_dynconv_bwd(dx over cu_seqlens)", ladder_dynconv_bwd(LADDER_RUNG_CPU, &one, &a), LADDER_ERR_ARG,
           "dx overlaps cu_seqlens", "must not share memory");
    cr_assert(memcmp(arena, arena_before, sizeof arena) == 0, "a refused call changed the arena");
}

/* A descriptor of @p n floats at the address @p at, never dereferenced: the check compares addresses only. */
static ladder_tensor floats_at(uintptr_t at, int64_t n) {
    return ladder_tensor_make((void *)at, LADDER_F32, 1, (const int64_t[]){n});
}

Test(hardening, check_disjoint_compares_byte_ranges_only) {
    /* addresses such as a GPU's: nothing is read */
    const uintptr_t base = (uintptr_t)1 << 40;
    ladder_tensor a = floats_at(base, 16), b = floats_at(base + 64, 16); /* a is [base, base+64) */
    cr_assert_eq(ladder_check_disjoint(&a, "a", &b, "b"), LADDER_OK, "b starts where a ends: %s", ladder_last_error());
    cr_assert_eq(ladder_check_disjoint(&b, "b", &a, "a"), LADDER_OK, "a ends where b starts: %s", ladder_last_error());
    b = floats_at(base + 60, 16);
    expect("ladder_check_disjoint(b from a's last float)", ladder_check_disjoint(&b, "b", &a, "a"), LADDER_ERR_ARG,
           "b overlaps a", NULL);
    b = floats_at(base - 4, 2);
    expect("ladder_check_disjoint(b across a's start)", ladder_check_disjoint(&a, "a", &b, "b"), LADDER_ERR_ARG,
           "a overlaps b", NULL);
    b = floats_at(base + 8, 1);
    expect("ladder_check_disjoint(b inside a)", ladder_check_disjoint(&a, "a", &b, "b"), LADDER_ERR_ARG, "a overlaps b",
           NULL);
    b = floats_at(base + 8, 0);
    cr_assert_eq(ladder_check_disjoint(&a, "a", &b, "b"), LADDER_OK, "an empty tensor overlaps nothing: %s",
                 ladder_last_error());
    b = floats_at(0, 16);
    cr_assert_eq(ladder_check_disjoint(&a, "a", &b, "b"), LADDER_OK, "an absent tensor overlaps nothing: %s",
                 ladder_last_error());
    b = floats_at(base + 128, 2);
    b.strides[0] = (int64_t)1 << 62; /* its span in bytes overflows: its layout error, not a guess */
    expect("ladder_check_disjoint(b of an overflowing span)", ladder_check_disjoint(&a, "a", &b, "b"), LADDER_ERR_ARG,
           "b has strides", NULL);
    b = floats_at(UINTPTR_MAX - 8, 4); /* 16 bytes from 8 bytes before the end of the address space */
    expect("ladder_check_disjoint(b past the end of memory)", ladder_check_disjoint(&a, "a", &b, "b"), LADDER_ERR_ARG,
           "b at", "past the end of the address space");
}

/* ---- public helpers given bad arguments ---------------------------------------------------------------------- */

Test(hardening, tensor_make_with_a_bad_rank_writes_nothing_out_of_bounds) {
    const int bad[] = {LADDER_MAX_RANK + 1, LADDER_MAX_RANK + 4, -1};
    int64_t shape[LADDER_MAX_RANK + 4] = {2, 2, 2, 2, 2, 2, 2, 2};
    float one;
    for (int i = 0; i < 3; i++) {
        ladder_tensor t = ladder_tensor_make(&one, LADDER_F32, bad[i], shape);
        cr_assert_eq(t.rank, bad[i], "ladder_tensor_make keeps the rank %d so that checks can name it", bad[i]);
        cr_assert_eq(ladder_tensor_numel(&t), -1, "numel of a rank-%d descriptor must be -1", bad[i]);
        cr_assert_eq(ladder_tensor_span(&t), -1, "span of a rank-%d descriptor must be -1", bad[i]);
        cr_assert(!ladder_tensor_is_contiguous(&t), "a rank-%d descriptor is not contiguous", bad[i]);
        cr_assert_eq(ladder_tensor_offset_of_flat(&t, 0), -1, "a rank-%d descriptor has no element 0", bad[i]);
        char s[64], want[32];
        ladder_tensor_shape_str(&t, s, sizeof s);
        snprintf(want, sizeof want, "(rank %d)", bad[i]);
        cr_assert_str_eq(s, want, "the shape string of a rank-%d descriptor", bad[i]);
        snprintf(want, sizeof want, "x has rank %d", bad[i]);
        expect("ladder_check_tensor(x of a bad rank)", ladder_check_tensor(&t, "x", 3, shape, "[A,B,C]"),
               LADDER_ERR_ARG, want, "0..4");
    }
}

Test(hardening, tensor_alloc_refuses_a_bad_rank_or_a_negative_size) {
    int64_t shape[LADDER_MAX_RANK + 1] = {2, 2, 2, 2, 2};
    ladder_tensor t;
    expect("ladder_tensor_alloc(rank 5)", ladder_tensor_alloc(&t, LADDER_F32, LADDER_MAX_RANK + 1, shape),
           LADDER_ERR_ARG, "rank 5", NULL);
    cr_assert_null(t.data, "a refused allocation leaves data NULL");
    expect("ladder_tensor_alloc(rank -1)", ladder_tensor_alloc(&t, LADDER_F32, -1, shape), LADDER_ERR_ARG,
           "rank -1", NULL);
    shape[1] = -3;
    expect("ladder_tensor_alloc([2,-3,2])", ladder_tensor_alloc(&t, LADDER_F32, 3, shape), LADDER_ERR_ARG,
           "size -3 in dimension 1", NULL);
    cr_assert_null(t.data, "a refused allocation leaves data NULL");
    expect("ladder_tensor_alloc([0,2^62,8])", ladder_tensor_alloc(&t, LADDER_F32, 3, too_large[0]), LADDER_ERR_ARG,
           "too large to address", NULL);
}
