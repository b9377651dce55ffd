/*
 * npy.c: the NumPy .npy format, versions 1.0, 2.0 and 3.0.
 *
 * A file is: the magic "\x93NUMPY", a major and a minor version byte (1.0, 2.0 or 3.0), the header length
 * (2 bytes little-endian in 1.0, 4 bytes in 2.0 and 3.0), the header, then the raw little-endian data in C
 * order up to the end of the file. The header is a Python dict literal, padded with spaces and ended by '\n':
 *
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 *
 * (3.0 differs from 2.0 only in allowing UTF-8 in the header, for the field names of structured dtypes, which
 * ladder does not read.) The reader takes exactly that grammar and nothing else a Python dict could hold, so a
 * header that only looks right ('fortran_order': Falsey) is refused rather than half-read. Every length comes
 * from the file, so every one is checked before it is used: a file that does not fit gives LADDER_ERR_IO, never
 * a crash (tests/fuzz/fuzz_npy.c throws random bytes at it under ASan and UBSan).
 */
#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "half.h"

#define MAX_HEADER 65536 /* numpy itself refuses headers above 10000 bytes unless told otherwise */

/* ---- opening: regular files only -------------------------------------------------------------------------- */

static const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "a special file";
}

/*
 * Open @p path for reading, or for writing (created or truncated), refusing anything but a regular file. A plain
 * fopen of a FIFO blocks until another process opens its other end, so the file is opened with O_NONBLOCK (which
 * changes nothing for a regular file) and fstat says what it is before a byte moves.
 */
static ladder_status open_regular(const char *path, bool for_writing, FILE **out) {
    *out = NULL;
    int flags = (for_writing ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY) | O_NONBLOCK | O_CLOEXEC;
    struct stat sb;
    int fd = open(path, flags, 0666);
    if (fd < 0) {
        int err = errno;
        /* a directory, or a FIFO that no one reads, cannot be opened for writing (EISDIR, ENXIO): say what it is */
        if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
            return ladder_fail(LADDER_ERR_IO, "%s is %s, not a regular file", path, file_kind(sb.st_mode));
        return ladder_fail(LADDER_ERR_IO, "%s: cannot %s: %s", path, for_writing ? "create" : "open", strerror(err));
    }
    ladder_status st = LADDER_OK;
    if (fstat(fd, &sb) != 0) st = ladder_fail(LADDER_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = ladder_fail(LADDER_ERR_IO, "%s is %s, not a regular file", path, file_kind(sb.st_mode));
    else if (!(*out = fdopen(fd, for_writing ? "wb" : "rb")))
        st = ladder_fail(LADDER_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (st != LADDER_OK) close(fd);
    return st;
}

/* ---- the header --------------------------------------------------------------------------------------------- */

/* A position in the header text [start, end): the parser never reads outside it, whatever bytes are there. */
typedef struct cursor {
    const char *start, *p, *end;
} cursor;

/* numpy writes ' ' between tokens, and nothing else. */
static void skip_spaces(cursor *c) {
    while (c->p < c->end && *c->p == ' ') c->p++;
}

/* Is @p ch next, after spaces? (Nothing is taken.) */
static bool next_is(cursor *c, char ch) {
    skip_spaces(c);
    return c->p < c->end && *c->p == ch;
}

/* Take @p ch if it is next, after spaces. */
static bool take(cursor *c, char ch) {
    if (!next_is(c, ch)) return false;
    c->p++;
    return true;
}

/* Take a quoted string, 'abc' or "abc", without escapes (no key or dtype that ladder reads has one). */
static bool take_string(cursor *c, const char **s, size_t *n) {
    skip_spaces(c);
    if (c->p == c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char quote = *c->p++;
    *s = c->p;
    while (c->p < c->end && *c->p != quote)
        if (*c->p++ == '\\') return false;
    if (c->p == c->end) return false;
    *n = (size_t)(c->p++ - *s);
    return true;
}

/* Take the word @p w if it is next as a whole value, followed by ',' or '}': "Falsey" is not False. */
static bool take_word(cursor *c, const char *w) {
    skip_spaces(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return false;
    cursor after = {c->start, c->p + n, c->end};
    if (!next_is(&after, ',') && !next_is(&after, '}')) return false;
    c->p += n;
    return true;
}

/* Take a size: decimal digits only, no sign, and the value must fit in int64. */
static bool take_size(cursor *c, int64_t *v) {
    skip_spaces(c);
    if (c->p == c->end || *c->p < '0' || *c->p > '9') return false;
    *v = 0;
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++)
        if (__builtin_mul_overflow(*v, 10, v) || __builtin_add_overflow(*v, *c->p - '0', v)) return false;
    return true;
}

static ladder_status malformed(const char *name, const cursor *c, const char *why) {
    return ladder_fail(LADDER_ERR_IO, "%s: malformed .npy header at byte %td: %s", name, c->p - c->start, why);
}

static ladder_status parse_descr(cursor *c, const char *name, ladder_dtype *dtype) {
    if (next_is(c, '['))
        return ladder_fail(LADDER_ERR_IO,
                           "%s: structured dtypes are not supported ('descr' is a list of fields); save a plain array",
                           name);
    const char *s;
    size_t n;
    if (!take_string(c, &s, &n)) return ladder_fail(LADDER_ERR_IO, "%s: 'descr' must be a string such as '<f4'", name);
    static const struct {
        const char *descr;
        ladder_dtype dtype;
    } types[] = {{"<f4", LADDER_F32}, {"<f2", LADDER_F16}, {"<i4", LADDER_I32}, {"<i8", LADDER_I64}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (n == strlen(types[i].descr) && memcmp(s, types[i].descr, n) == 0) {
            *dtype = types[i].dtype;
            return LADDER_OK;
        }
    return ladder_fail(LADDER_ERR_IO,
                       "%s: dtype '%.*s' is not supported (ladder reads little-endian <f4, <f2, <i4, <i8)", name,
                       (int)(n < 32 ? n : 32), s);
}

static ladder_status parse_fortran_order(cursor *c, const char *name) {
    if (take_word(c, "False")) return LADDER_OK;
    if (take_word(c, "True"))
        return ladder_fail(LADDER_ERR_IO, "%s: Fortran-order arrays are not supported; save a C-order array", name);
    return ladder_fail(LADDER_ERR_IO, "%s: 'fortran_order' must be True or False", name);
}

static ladder_status bad_shape(const char *name, const char *why) {
    return ladder_fail(LADDER_ERR_IO, "%s: malformed 'shape' in the .npy header: %s", name, why);
}

/* A tuple of sizes: (), (5,), (2, 3) or (2, 3,). */
static ladder_status parse_shape(cursor *c, const char *name, int *rank, int64_t *shape) {
    if (!take(c, '(')) return bad_shape(name, "it is not a tuple");
    *rank = 0;
    bool comma = false;
    while (!take(c, ')')) {
        if (*rank > 0 && !comma) return bad_shape(name, "expected ',' or ')' after a size");
        if (*rank == LADDER_MAX_RANK)
            return ladder_fail(LADDER_ERR_IO, "%s: rank above %d is not supported", name, LADDER_MAX_RANK);
        if (!take_size(c, &shape[*rank])) return bad_shape(name, "a size must be a non-negative integer within int64");
        (*rank)++;
        comma = take(c, ',');
    }
    if (*rank == 1 && !comma) return bad_shape(name, "(n) is not a tuple; a shape of one size is written (n,)");
    return LADDER_OK;
}

/* Parse the @p len header bytes at @p h (not NUL-terminated). */
static ladder_status parse_header(const char *name, const char *h, size_t len, ladder_dtype *dtype, int *rank,
                                  int64_t *shape) {
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    if (h[len - 1] != '\n') return ladder_fail(LADDER_ERR_IO, "%s: the .npy header does not end in a newline", name);
    cursor c = {h, h, h + len - 1};
    bool seen[3] = {false, false, false};
    if (!take(&c, '{')) return malformed(name, &c, "expected '{'");
    while (!take(&c, '}')) { /* '}' ends an empty dict, the last entry, or a trailing comma */
        const char *key;
        size_t n;
        if (!take_string(&c, &key, &n)) return malformed(name, &c, "expected a quoted key or '}'");
        int k = 0;
        while (k < 3 && !(n == strlen(keys[k]) && memcmp(key, keys[k], n) == 0)) k++;
        if (k == 3)
            return ladder_fail(LADDER_ERR_IO,
                               "%s: unknown key '%.*s' in the .npy header (ladder reads 'descr', 'fortran_order' and "
                               "'shape')",
                               name, (int)(n < 32 ? n : 32), key);
        if (seen[k]) return ladder_fail(LADDER_ERR_IO, "%s: '%s' appears twice in the .npy header", name, keys[k]);
        seen[k] = true;
        if (!take(&c, ':')) return malformed(name, &c, "expected ':' after a key");
        ladder_status st = k == 0   ? parse_descr(&c, name, dtype)
                           : k == 1 ? parse_fortran_order(&c, name)
                                    : parse_shape(&c, name, rank, shape);
        if (st != LADDER_OK) return st;
        if (!take(&c, ',') && !next_is(&c, '}')) return malformed(name, &c, "expected ',' or '}' after a value");
    }
    skip_spaces(&c);
    if (c.p != c.end) return malformed(name, &c, "unexpected text after the closing '}'");
    for (int k = 0; k < 3; k++)
        if (!seen[k]) return ladder_fail(LADDER_ERR_IO, "%s: the .npy header has no '%s'", name, keys[k]);
    return LADDER_OK;
}

/* ---- reading ------------------------------------------------------------------------------------------------ */

static ladder_status truncated(const char *name) {
    return ladder_fail(LADDER_ERR_IO, "%s: the file is truncated", name);
}

/* Bytes from the stream's position to its end; the position is kept. */
static ladder_status bytes_left(FILE *f, const char *name, int64_t *left) {
    off_t here = ftello(f), end = -1;
    if (here >= 0 && fseeko(f, 0, SEEK_END) == 0) end = ftello(f);
    if (end < 0 || fseeko(f, here, SEEK_SET) != 0)
        return ladder_fail(LADDER_ERR_IO, "%s: cannot seek: %s", name, strerror(errno));
    *left = (int64_t)(end - here);
    return LADDER_OK;
}

ladder_status ladder_npy_read_stream(FILE *f, const char *name, ladder_tensor *out) {
    if (!out) return ladder_fail(LADDER_ERR_ARG, "ladder_npy_read_stream: out is null");
    memset(out, 0, sizeof *out);
    if (!f || !name) return ladder_fail(LADDER_ERR_ARG, "ladder_npy_read_stream: the stream or its name is null");
    unsigned char pre[8], len[4] = {0, 0, 0, 0};
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0)
        return ladder_fail(LADDER_ERR_IO, "%s: not a .npy file (no \\x93NUMPY magic)", name);
    if (pre[6] < 1 || pre[6] > 3 || pre[7] != 0)
        return ladder_fail(LADDER_ERR_IO, "%s: .npy format version %d.%d is not supported (ladder reads 1.0, 2.0, 3.0)",
                           name, pre[6], pre[7]);
    size_t len_bytes = pre[6] == 1 ? 2 : 4;
    if (fread(len, 1, len_bytes, f) != len_bytes) return truncated(name);
    size_t header_len = (size_t)len[0] | (size_t)len[1] << 8 | (size_t)len[2] << 16 | (size_t)len[3] << 24;
    if (header_len == 0 || header_len > MAX_HEADER)
        return ladder_fail(LADDER_ERR_IO, "%s: .npy header length %zu is not plausible", name, header_len);
    char *header = malloc(header_len);
    if (!header) return ladder_fail(LADDER_ERR_NOMEM, "%s: cannot allocate the header", name);
    ladder_dtype dtype = LADDER_F32;
    int rank = 0;
    int64_t shape[LADDER_MAX_RANK];
    ladder_status st = fread(header, 1, header_len, f) == header_len
                           ? parse_header(name, header, header_len, &dtype, &rank, shape)
                           : truncated(name);
    free(header);
    if (st != LADDER_OK) return st;

    int64_t need = ladder_shape_bytes(dtype, rank, shape), left = 0;
    if (need < 0) return ladder_fail(LADDER_ERR_IO, "%s: the shape in the .npy header is too large to address", name);
    /* the data must be all there, and nothing after it, before anything is allocated for it */
    st = bytes_left(f, name, &left);
    if (st != LADDER_OK) return st;
    if (left < need) return truncated(name);
    if (left > need)
        return ladder_fail(LADDER_ERR_IO, "%s: %lld bytes after the data (the header's shape needs %lld bytes)", name,
                           (long long)(left - need), (long long)need);
    if (ladder_tensor_alloc(out, dtype, rank, shape) != LADDER_OK)
        return ladder_fail(LADDER_ERR_NOMEM, "%s: cannot allocate %lld bytes for the data", name, (long long)need);
    if (fread(out->data, 1, (size_t)need, f) != (size_t)need) {
        ladder_tensor_free(out);
        return truncated(name);
    }
    ladder_clear_error();
    return LADDER_OK;
}

ladder_status ladder_npy_read(const char *path, ladder_tensor *out) {
    if (!out) return ladder_fail(LADDER_ERR_ARG, "ladder_npy_read: out is null");
    memset(out, 0, sizeof *out);
    if (!path) return ladder_fail(LADDER_ERR_ARG, "ladder_npy_read: path is null");
    FILE *f;
    ladder_status st = open_regular(path, false, &f);
    if (st != LADDER_OK) return st;
    st = ladder_npy_read_stream(f, path, out);
    fclose(f);
    return st;
}

/* ---- writing ------------------------------------------------------------------------------------------------ */

/* What a tensor must be for its elements to be read at all: checked before the file is touched. */
static ladder_status check_writable(const char *name, const ladder_tensor *t) {
    if (!t) return ladder_fail(LADDER_ERR_ARG, "%s: the tensor to write is null", name);
    if (!t->data) return ladder_fail(LADDER_ERR_ARG, "%s: the tensor to write has null data", name);
    return ladder_tensor_check_layout(t, name);
}

ladder_status ladder_npy_write_stream(FILE *f, const char *name, const ladder_tensor *t) {
    if (!f || !name) return ladder_fail(LADDER_ERR_ARG, "ladder_npy_write_stream: the stream or its name is null");
    ladder_status st = check_writable(name, t);
    if (st != LADDER_OK) return st;
    ladder_dtype file_dtype = t->dtype == LADDER_BF16 ? LADDER_F32 : t->dtype;
    const char *descr = file_dtype == LADDER_F32   ? "<f4"
                        : file_dtype == LADDER_F16 ? "<f2"
                        : file_dtype == LADDER_I32 ? "<i4"
                                                   : "<i8";
    char dict[256]; /* room for rank LADDER_MAX_RANK with 19-digit sizes */
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->rank; i++)
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%lld%s", (long long)t->shape[i],
                        t->rank == 1 ? "," : i + 1 < t->rank ? ", " : "");
    len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
    /* pad with spaces so that magic + version + length + header is a multiple of 64, ending in '\n' */
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    int header_len = len + pad + 1;
    pre[8] = (unsigned char)(header_len & 0xff);
    pre[9] = (unsigned char)(header_len >> 8);
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)len, f) == (size_t)len;
    for (int i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    int64_t n = ladder_tensor_numel(t);
    size_t esize = ladder_dtype_size(file_dtype);
    for (int64_t i = 0; ok && i < n; i++) {
        int64_t off = ladder_tensor_offset_of_flat(t, i);
        unsigned char buf[8];
        if (t->dtype == LADDER_BF16) {
            float v = (float)ladder_tensor_get(t, off);
            memcpy(buf, &v, 4);
        } else {
            memcpy(buf, (const unsigned char *)t->data + (size_t)off * esize, esize);
        }
        ok = fwrite(buf, 1, esize, f) == esize;
    }
    if (!ok) return ladder_fail(LADDER_ERR_IO, "%s: write failed: %s", name, strerror(errno));
    ladder_clear_error();
    return LADDER_OK;
}

ladder_status ladder_npy_write(const char *path, const ladder_tensor *t) {
    if (!path) return ladder_fail(LADDER_ERR_ARG, "ladder_npy_write: path is null");
    ladder_status st = check_writable(path, t);
    if (st != LADDER_OK) return st;
    FILE *f;
    st = open_regular(path, true, &f);
    if (st != LADDER_OK) return st;
    st = ladder_npy_write_stream(f, path, t);
    if (fclose(f) != 0 && st == LADDER_OK)
        st = ladder_fail(LADDER_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return st;
}
