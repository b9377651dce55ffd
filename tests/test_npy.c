/* .npy reading and writing: round trips, and every malformed file a clear LADDER_ERR_IO. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* A file of format version @p major.0 with the given header (taken as is) and data bytes. */
static size_t make_npy_version(char *buf, int major, const char *header, size_t data_bytes) {
    size_t len = strlen(header), at = 8;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (char)major;
    buf[7] = 0;
    for (int i = 0; i < (major == 1 ? 2 : 4); i++) buf[at++] = (char)((len >> (8 * i)) & 0xff);
    memcpy(buf + at, header, len);
    memset(buf + at + len, 0x3f, data_bytes);
    return at + len + data_bytes;
}

/* A well-formed version-1.0 file with the given header dict (ended by '\n' here) and data bytes. */
static size_t make_npy(char *buf, const char *dict, size_t data_bytes) {
    char header[400];
    snprintf(header, sizeof header, "%s\n", dict);
    return make_npy_version(buf, 1, header, data_bytes);
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

/* ---- files that are not regular files ----------------------------------------------------------------------- */

static void expect_read_fails(const char *path, ladder_status want, const char *why) {
    ladder_tensor t;
    ladder_status st = ladder_npy_read(path, &t);
    cr_assert_eq(st, want, "reading %s: expected %s, got %s (%s)", path, ladder_status_name(want),
                 ladder_status_name(st), ladder_last_error());
    cr_assert_not_null(strstr(ladder_last_error(), why), "message '%s' should say '%s'", ladder_last_error(), why);
    cr_assert_not_null(strstr(ladder_last_error(), path), "message '%s' should name the file", ladder_last_error());
    cr_assert_null(t.data);
}

static void expect_write_fails(const char *path, const ladder_tensor *t, ladder_status want, const char *why) {
    ladder_status st = ladder_npy_write(path, t);
    cr_assert_eq(st, want, "writing %s: expected %s, got %s (%s)", path, ladder_status_name(want),
                 ladder_status_name(st), ladder_last_error());
    cr_assert_not_null(strstr(ladder_last_error(), why), "message '%s' should say '%s'", ladder_last_error(), why);
    cr_assert_not_null(strstr(ladder_last_error(), path), "message '%s' should name the file", ladder_last_error());
}

/* A plain fopen of a FIFO blocks until a writer appears: the timeout turns that hang into a failure. */
Test(npy, a_fifo_is_refused_without_blocking, .timeout = 10) {
    char path[128];
    path_of("x.npy", path, sizeof path);
    cr_assert_eq(mkfifo(path, 0600), 0, "cannot make the FIFO %s", path);
    expect_read_fails(path, LADDER_ERR_IO, "is a FIFO, not a regular file");
    float v = 1;
    ladder_tensor t = ladder_tensor_make(&v, LADDER_F32, 0, NULL);
    expect_write_fails(path, &t, LADDER_ERR_IO, "is a FIFO, not a regular file");
}

Test(npy, a_directory_or_a_device_is_refused_by_name) {
    expect_read_fails(dir, LADDER_ERR_IO, "is a directory, not a regular file");
    expect_read_fails("/dev/null", LADDER_ERR_IO, "is a character device, not a regular file");
    float v = 1;
    ladder_tensor t = ladder_tensor_make(&v, LADDER_F32, 0, NULL);
    expect_write_fails(dir, &t, LADDER_ERR_IO, "is a directory, not a regular file");
}

/* ---- bad arguments ------------------------------------------------------------------------------------------- */

Test(npy, write_refuses_a_bad_rank_a_bad_layout_or_null_data) {
    char path[128];
    path_of("w.npy", path, sizeof path);
    float buf[64] = {0};
    int64_t shape[LADDER_MAX_RANK + 1] = {2, 2, 2, 2, 2};
    ladder_tensor t = ladder_tensor_make(buf, LADDER_F32, LADDER_MAX_RANK + 1, shape);
    expect_write_fails(path, &t, LADDER_ERR_ARG, "rank 5");
    t = ladder_tensor_make(NULL, LADDER_F32, 2, shape);
    expect_write_fails(path, &t, LADDER_ERR_ARG, "null");
    t = ladder_tensor_make(buf, LADDER_F32, 2, shape);
    t.strides[0] = -2;
    expect_write_fails(path, &t, LADDER_ERR_ARG, "stride -2");
    cr_assert_neq(access(path, F_OK), 0, "a refused write must not create %s", path);
    cr_assert_eq(ladder_npy_write(NULL, &t), LADDER_ERR_ARG, "a null path");
    cr_assert_eq(ladder_npy_write(path, NULL), LADDER_ERR_ARG, "a null tensor");
    cr_assert_eq(ladder_npy_read(NULL, &t), LADDER_ERR_ARG, "a null path");
    cr_assert_eq(ladder_npy_read(path, NULL), LADDER_ERR_ARG, "a null output");
}

/* ---- strict headers ------------------------------------------------------------------------------------------ */

Test(npy, a_header_is_read_strictly) {
    static const struct {
        const char *dict, *why;
    } bad[] = {
        {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 3), }", "'fortran_order' must be True or False"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", "'fortran_order' must be True or False"},
        {"{'descr': '<f4', 'fortran_order': 'False', 'shape': (2, 3), }", "'fortran_order' must be True or False"},
        {"{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (2, 3), }",
         "structured dtypes are not supported"},
        {"{'descr': 5, 'fortran_order': False, 'shape': (2, 3), }", "'descr' must be a string"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }", "'<f4, ' is not supported"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'foo': 1, }", "unknown key 'foo'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (2, 3), }", "'shape' appears twice"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", "malformed 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,, 3), }", "malformed 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", "malformed 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", "malformed 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", "malformed 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 99999999999999999999), }", "malformed 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", "malformed .npy header"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3), }", "malformed .npy header"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x", "after the closing '}'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }}", "after the closing '}'"},
        {"'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", "malformed .npy header"},
        {"{descr: '<f4', 'fortran_order': False, 'shape': (2, 3), }", "malformed .npy header"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), \t}", "malformed .npy header"},
        {"", "malformed .npy header"},
    };
    char buf[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) expect_bad(buf, make_npy(buf, bad[i].dict, 24), bad[i].why);

    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    expect_bad(buf, make_npy(buf, dict, 24 + 3), "3 bytes after the data");
    size_t n = make_npy(buf, dict, 24);
    buf[7] = 1; /* version 1.1 */
    expect_bad(buf, n, "version 1.1");
    char header[128];
    snprintf(header, sizeof header, "%s   ", dict); /* padded, but no '\n' at the end */
    expect_bad(buf, make_npy_version(buf, 1, header, 24), "does not end in a newline");
    n = make_npy(buf, dict, 24);
    buf[10 + 1] = '\0'; /* a NUL byte where the first key should start */
    expect_bad(buf, n, "malformed .npy header");
}

/* Read the bytes as a file and expect a [2,3] f32 (or, with @p rank 0, a scalar) whose bytes are all 0x3f. */
static void expect_good(const char *bytes, size_t n, int rank, const char *what) {
    char path[128];
    path_of("good.npy", path, sizeof path);
    FILE *f = fopen(path, "wb");
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
    ladder_tensor t;
    ladder_fail(LADDER_ERR_IO, "left over from an earlier call");
    cr_assert_eq(ladder_npy_read(path, &t), LADDER_OK, "%s: %s", what, ladder_last_error());
    cr_assert_str_empty(ladder_last_error(), "%s: a successful read must clear the last error", what);
    cr_assert_eq(t.dtype, LADDER_F32, "%s: dtype", what);
    cr_assert_eq(t.rank, rank, "%s: rank %d, expected %d", what, t.rank, rank);
    cr_assert(rank == 0 || (t.shape[0] == 2 && t.shape[1] == 3), "%s: shape", what);
    for (int64_t i = 0; i < ladder_tensor_numel(&t); i++)
        cr_assert_eq(((uint32_t *)t.data)[i], 0x3f3f3f3fu, "%s: element %lld", what, (long long)i);
    ladder_tensor_free(&t);
}

Test(npy, what_numpy_and_other_writers_produce_is_read) {
    char buf[512], header[256];
    /* numpy.save (2.4) for np.full((2, 3), ...): 1.0, padded with spaces to 128 bytes, then '\n' */
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    snprintf(header, sizeof header, "%-117s\n", dict);
    expect_good(buf, make_npy_version(buf, 1, header, 24), 2, "numpy.save, version 1.0");
    expect_good(buf, make_npy_version(buf, 2, header, 24), 2, "version 2.0");
    expect_good(buf, make_npy_version(buf, 3, header, 24), 2, "version 3.0");
    expect_good(buf, make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 24), 2,
                "no trailing comma");
    expect_good(buf, make_npy(buf, "{'shape':(2,3),'fortran_order':False,'descr':'<f4'}", 24), 2,
                "other key order, no spaces");
    expect_good(buf, make_npy(buf, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3,), }", 24), 2,
                "double quotes, a trailing comma in the shape");
    expect_good(buf, make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4), 0, "a scalar");
}
