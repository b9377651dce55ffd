/*
 * npy.c: the NumPy .npy format, version 1.0 and 2.0.
 *
 * A file is: the magic "\x93NUMPY", a major and minor version byte, the
 * header length (2 bytes little-endian in 1.0, 4 bytes in 2.0), an ASCII
 * Python dict {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces to a 64-byte boundary and ended by '\n', then the raw
 * little-endian data in C order. Every field read here is checked; a file
 * that does not fit gives LADDER_ERR_IO, never a crash.
 */
#include "npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"

#define MAX_HEADER 65536

static const char *skip_space(const char *s) {
    while (*s && isspace((unsigned char)*s)) s++;
    return s;
}

/* The text after "'key':" in the header dict, or NULL. */
static const char *dict_value(const char *header, const char *key) {
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    const char *p = strstr(header, quoted);
    if (!p) return NULL;
    p = skip_space(p + strlen(quoted));
    if (*p != ':') return NULL;
    return skip_space(p + 1);
}

static ladder_status parse_header(const char *path, const char *h, ladder_dtype *dtype, int *rank, int64_t *shape) {
    const char *descr = dict_value(h, "descr");
    if (!descr || *descr != '\'')
        return ladder_fail(LADDER_ERR_IO, "%s: the .npy header has no 'descr' string", path);
    static const struct { const char *descr; ladder_dtype dtype; } types[] = {
        {"'<f4'", LADDER_F32}, {"'<f2'", LADDER_F16}, {"'<i4'", LADDER_I32}, {"'<i8'", LADDER_I64}};
    bool found = false;
    for (size_t i = 0; i < sizeof types / sizeof types[0] && !found; i++)
        if (strncmp(descr, types[i].descr, strlen(types[i].descr)) == 0) *dtype = types[i].dtype, found = true;
    if (!found) {
        char got[16] = {0};
        sscanf(descr, "'%15[^']'", got);
        return ladder_fail(LADDER_ERR_IO,
                           "%s: dtype '%s' is not supported (ladder reads little-endian <f4, <f2, <i4, <i8)", path, got);
    }
    const char *fortran = dict_value(h, "fortran_order");
    if (!fortran) return ladder_fail(LADDER_ERR_IO, "%s: the .npy header has no 'fortran_order'", path);
    if (strncmp(fortran, "False", 5) != 0)
        return ladder_fail(LADDER_ERR_IO, "%s: Fortran-order arrays are not supported; save a C-order array", path);
    const char *s = dict_value(h, "shape");
    if (!s || *s != '(') return ladder_fail(LADDER_ERR_IO, "%s: the .npy header has no 'shape' tuple", path);
    s++;
    *rank = 0;
    for (;;) {
        s = skip_space(s);
        if (*s == ')') break;
        if (*rank == LADDER_MAX_RANK)
            return ladder_fail(LADDER_ERR_IO, "%s: rank above %d is not supported", path, LADDER_MAX_RANK);
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno || v < 0)
            return ladder_fail(LADDER_ERR_IO, "%s: malformed 'shape' in the .npy header", path);
        shape[(*rank)++] = v;
        s = skip_space(end);
        if (*s == ',') s++;
        else if (*s != ')') return ladder_fail(LADDER_ERR_IO, "%s: malformed 'shape' in the .npy header", path);
    }
    return LADDER_OK;
}

ladder_status ladder_npy_read(const char *path, ladder_tensor *out) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return ladder_fail(LADDER_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    ladder_status st = LADDER_OK;
    char *header = NULL;
    unsigned char pre[10];
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        st = ladder_fail(LADDER_ERR_IO, "%s: not a .npy file (no \\x93NUMPY magic)", path);
        goto done;
    }
    size_t header_len;
    if (pre[6] == 1) {
        if (fread(pre + 8, 1, 2, f) != 2) goto truncated;
        header_len = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        unsigned char len4[4];
        if (fread(len4, 1, 4, f) != 4) goto truncated;
        header_len = (size_t)len4[0] | (size_t)len4[1] << 8 | (size_t)len4[2] << 16 | (size_t)len4[3] << 24;
    } else {
        st = ladder_fail(LADDER_ERR_IO, "%s: .npy format version %d is not supported", path, pre[6]);
        goto done;
    }
    if (header_len == 0 || header_len > MAX_HEADER) {
        st = ladder_fail(LADDER_ERR_IO, "%s: .npy header length %zu is not plausible", path, header_len);
        goto done;
    }
    header = malloc(header_len + 1);
    if (!header) {
        st = ladder_fail(LADDER_ERR_NOMEM, "%s: cannot allocate the header", path);
        goto done;
    }
    if (fread(header, 1, header_len, f) != header_len) goto truncated;
    header[header_len] = '\0';
    if (strlen(header) != header_len) {
        st = ladder_fail(LADDER_ERR_IO, "%s: the .npy header contains a NUL byte", path);
        goto done;
    }

    ladder_dtype dtype = LADDER_F32;
    int rank = 0;
    int64_t shape[LADDER_MAX_RANK];
    st = parse_header(path, header, &dtype, &rank, shape);
    if (st != LADDER_OK) goto done;
    int64_t need = ladder_shape_bytes(dtype, rank, shape);
    if (need < 0) {
        st = ladder_fail(LADDER_ERR_IO, "%s: the shape in the .npy header is too large to address", path);
        goto done;
    }
    long here = ftell(f); /* the data must all be there before anything is allocated for it */
    if (fseek(f, 0, SEEK_END) != 0 || ftell(f) - here < need) goto truncated;
    if (fseek(f, here, SEEK_SET) != 0) goto truncated;
    st = ladder_tensor_alloc(out, dtype, rank, shape);
    if (st != LADDER_OK) goto done;
    size_t n = (size_t)ladder_tensor_numel(out);
    if (n && fread(out->data, ladder_dtype_size(dtype), n, f) != n) {
        ladder_tensor_free(out);
        goto truncated;
    }
    goto done;

truncated:
    st = ladder_fail(LADDER_ERR_IO, "%s: the file is truncated", path);
done:
    free(header);
    fclose(f);
    return st;
}

ladder_status ladder_npy_write(const char *path, const ladder_tensor *t) {
    ladder_dtype file_dtype = t->dtype == LADDER_BF16 ? LADDER_F32 : t->dtype;
    const char *descr = file_dtype == LADDER_F32   ? "<f4"
                        : file_dtype == LADDER_F16 ? "<f2"
                        : file_dtype == LADDER_I32 ? "<i4"
                                                   : "<i8";
    char dict[256];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->rank; i++)
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%lld%s", (long long)t->shape[i],
                        t->rank == 1 ? "," : i + 1 < t->rank ? ", " : "");
    len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
    /* pad with spaces so that magic + version + length + header is a multiple of 64, ending in '\n' */
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;

    FILE *f = fopen(path, "wb");
    if (!f) return ladder_fail(LADDER_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    int header_len = len + pad + 1;
    pre[8] = (unsigned char)(header_len & 0xff);
    pre[9] = (unsigned char)(header_len >> 8);
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)len, f) == (size_t)len;
    for (int i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    int64_t n = ladder_tensor_numel(t);
    for (int64_t i = 0; ok && i < n; i++) {
        int64_t off = ladder_tensor_offset_of_flat(t, i);
        size_t esize = ladder_dtype_size(file_dtype);
        unsigned char buf[8];
        if (t->dtype == LADDER_BF16) {
            float v = (float)ladder_tensor_get(t, off);
            memcpy(buf, &v, 4);
        } else {
            memcpy(buf, (const unsigned char *)t->data + (size_t)off * esize, esize);
        }
        ok = fwrite(buf, 1, esize, f) == esize;
    }
    if (fclose(f) != 0) ok = false;
    if (!ok) return ladder_fail(LADDER_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return LADDER_OK;
}
