/* .npy reading and writing: round trips, and every malformed file a clear LADDER_ERR_IO. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "ladder.h"

static char dir[64];

static void make_dir(void) { harness_tmpdir_make(dir, sizeof dir, "npy"); }
static void remove_dir(void) { harness_tmpdir_remove(dir); }

TestSuite(npy, .init = make_dir, .fini = remove_dir);

static void path_of(const char *name, char *out, size_t n) { snprintf(out, n, "%s/%s", dir, name); }

static void round_trip(ladder_dtype dtype) {
    /* a strided source: every second channel of a [2,3,8] tensor */
    int64_t big_shape[3] = {2, 3, 8};
    ladder_tensor big;
    cr_assert_eq(ladder_tensor_alloc(&big, dtype, 3, big_shape), LADDER_OK);
    ladder_rng rng;
    ladder_rng_seed(&rng, 7);
    for (int64_t i = 0; i < 48; i++)
        ladder_tensor_set(&big, i, ladder_dtype_is_float(dtype) ? ladder_rng_normal(&rng) : (double)(i * 37 - 500));
    ladder_tensor view = big;
    view.shape[2] = 4;
    view.strides[2] = 2;
    char path[128];
    path_of("a.npy", path, sizeof path);
    cr_assert_eq(ladder_npy_write(path, &view), LADDER_OK, "%s", ladder_last_error());
    ladder_tensor back;
    cr_assert_eq(ladder_npy_read(path, &back), LADDER_OK, "%s", ladder_last_error());
    cr_assert_eq(back.rank, 3);
    cr_assert(back.shape[0] == 2 && back.shape[1] == 3 && back.shape[2] == 4);
    cr_assert_eq(back.dtype, dtype == LADDER_BF16 ? LADDER_F32 : dtype, "bf16 is written as float32");
    for (int64_t i = 0; i < 24; i++)
        cr_assert_eq(ladder_tensor_get(&back, i), ladder_tensor_get(&view, ladder_tensor_offset_of_flat(&view, i)),
                     "%s element %lld differs after the round trip", ladder_dtype_name(dtype), (long long)i);
    ladder_tensor_free(&back);
    ladder_tensor_free(&big);
}

Test(npy, round_trip_f32) { round_trip(LADDER_F32); }
Test(npy, round_trip_f16) { round_trip(LADDER_F16); }
Test(npy, round_trip_bf16_as_f32) { round_trip(LADDER_BF16); }
Test(npy, round_trip_i32) { round_trip(LADDER_I32); }
Test(npy, round_trip_i64) { round_trip(LADDER_I64); }

Test(npy, rank_one_shape_has_trailing_comma) {
    int64_t shape[1] = {5};
    ladder_tensor t;
    cr_assert_eq(ladder_tensor_alloc(&t, LADDER_I32, 1, shape), LADDER_OK);
    for (int i = 0; i < 5; i++) ((int32_t *)t.data)[i] = i;
    char path[128];
    path_of("cu.npy", path, sizeof path);
    cr_assert_eq(ladder_npy_write(path, &t), LADDER_OK);
    FILE *f = fopen(path, "rb");
    char head[128] = {0};
    cr_assert_eq(fread(head, 1, 127, f), 127);
    fclose(f);
    cr_assert_not_null(strstr(head + 10, "'shape': (5,)"), "header was: %s", head + 10);
    ladder_tensor_free(&t);
}

/* Write raw bytes as a file and expect the reader to refuse it with a message containing `why`. */
static void expect_bad(const char *bytes, size_t n, const char *why) {
    char path[128];
    path_of("bad.npy", path, sizeof path);
    FILE *f = fopen(path, "wb");
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
    ladder_tensor t;
    ladder_status st = ladder_npy_read(path, &t);
    cr_assert_eq(st, LADDER_ERR_IO, "expected LADDER_ERR_IO for a file that is %s, got %s", why, ladder_status_name(st));
    cr_assert_not_null(strstr(ladder_last_error(), why), "message '%s' should say '%s'", ladder_last_error(), why);
    cr_assert_not_null(strstr(ladder_last_error(), path), "message '%s' should name the file", ladder_last_error());
    cr_assert_null(t.data);
}

/* A well-formed version-1.0 file with the given header dict and data bytes. */
static size_t make_npy(char *buf, const char *dict, size_t data_bytes) {
    size_t len = strlen(dict);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)((len + 1) & 0xff);
    buf[9] = (char)((len + 1) >> 8);
    memcpy(buf + 10, dict, len);
    buf[10 + len] = '\n';
    memset(buf + 11 + len, 0x3f, data_bytes);
    return 11 + len + data_bytes;
}

Test(npy, malformed_files_are_clear_errors) {
    char buf[512];
    expect_bad("hello world", 11, "no \\x93NUMPY magic");
    expect_bad("\x93NUMPY\x01", 7, "no \\x93NUMPY magic");
    expect_bad("\x93NUMPY\x01\x00\x40", 9, "truncated");
    expect_bad("\x93NUMPY\x09\x00\x10\x00", 10, "version 9");
    size_t n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
    expect_bad(buf, n - 4, "truncated");
    n = make_npy(buf, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
    expect_bad(buf, n, "'>f4' is not supported");
    n = make_npy(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 48);
    expect_bad(buf, n, "'<f8' is not supported");
    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24);
    expect_bad(buf, n, "Fortran");
    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 24);
    expect_bad(buf, n, "malformed 'shape'");
    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1), }", 4);
    expect_bad(buf, n, "rank above");
    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, }", 4);
    expect_bad(buf, n, "no 'shape'");
    n = make_npy(buf, "{'fortran_order': False, 'shape': (1,), }", 4);
    expect_bad(buf, n, "no 'descr'");
}

Test(npy, a_shape_too_large_for_the_file_is_refused_before_allocating) {
    char buf[512];
    size_t n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905, 1, 1), }", 4);
    expect_bad(buf, n, "too large to address");
    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000), }", 4);
    expect_bad(buf, n, "truncated");
}

Test(npy, a_zero_size_does_not_hide_a_huge_one) {
    /* 0 bytes of data, so the size check passed and ladder_tensor_make's strides overflowed (UBSan) */
    static const char *const shapes[] = {"(0, 4611686018427387904, 8)", "(4611686018427387904, 0, 8)",
                                         "(3037000500, 3037000500, 0)", "(0, 2305843009213693952, 2)"};
    for (int i = 0; i < 4; i++) {
        char buf[512], dict[128];
        snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", shapes[i]);
        expect_bad(buf, make_npy(buf, dict, 0), "too large to address");
    }
}

Test(npy, missing_file_is_io_error) {
    ladder_tensor t;
    cr_assert_eq(ladder_npy_read("/nonexistent/x.npy", &t), LADDER_ERR_IO);
    cr_assert_not_null(strstr(ladder_last_error(), "/nonexistent/x.npy"));
}
