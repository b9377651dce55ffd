/*
 * tests/fuzz/fuzz_npy.c: a libFuzzer target for the .npy reader (`make fuzz`, rules in fuzz.mk).
 *
 * Whatever the bytes, ladder_npy_read_stream() must return a status and never crash, leak, hang or hit
 * undefined behaviour (the target is built with ASan and UBSan). A refusal must name the file. When the bytes
 * are accepted, the tensor must be what they say: a valid contiguous descriptor whose data is exactly the
 * bytes after the header; and writing it back and reading that again must give the same tensor, so that the
 * reader and the writer agree. A broken property aborts, which libFuzzer reports as a crash with its input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

#define NAME "fuzz.npy"

static void require(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_npy: %s (last error: %s)\n", what, ladder_last_error());
        abort();
    }
}

/* Read @p size bytes at @p data as a .npy file named NAME. */
static ladder_status read_bytes(const uint8_t *data, size_t size, ladder_tensor *t) {
    FILE *f = fmemopen((void *)data, size, "rb"); /* read only: the bytes are not written through the cast */
    require(f != NULL, "fmemopen failed");
    ladder_status st = ladder_npy_read_stream(f, NAME, t);
    fclose(f);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0; /* fmemopen wants at least one byte; an empty file is the magic test's first case */
    ladder_tensor t;
    ladder_status st = read_bytes(data, size, &t);
    if (st != LADDER_OK) {
        require(t.data == NULL, "a refused file left a tensor behind");
        require(strstr(ladder_last_error(), NAME) != NULL, "the message does not name the file");
        return 0;
    }
    require(ladder_last_error()[0] == '\0', "a successful read left an error message");
    int64_t bytes = ladder_tensor_span_bytes(&t);
    require(ladder_tensor_check_layout(&t, NAME) == LADDER_OK, "an accepted file gave an invalid descriptor");
    require(ladder_tensor_is_contiguous(&t), "an accepted file gave a strided tensor");
    require(bytes >= 0 && (size_t)bytes <= size, "the data is larger than the file");
    require(memcmp(t.data, data + size - (size_t)bytes, (size_t)bytes) == 0, "the data is not the file's last bytes");

    char *copy = NULL;
    size_t copy_size = 0;
    FILE *w = open_memstream(&copy, &copy_size);
    require(w != NULL, "open_memstream failed");
    require(ladder_npy_write_stream(w, NAME, &t) == LADDER_OK, "an accepted tensor cannot be written back");
    require(fclose(w) == 0, "cannot finish writing to memory");
    ladder_tensor back;
    require(read_bytes((const uint8_t *)copy, copy_size, &back) == LADDER_OK, "what was written cannot be read back");
    require(back.dtype == t.dtype && back.rank == t.rank, "the round trip changed the dtype or rank");
    require(memcmp(back.shape, t.shape, sizeof t.shape) == 0, "the round trip changed the shape");
    require(memcmp(back.data, t.data, (size_t)bytes) == 0, "the round trip changed the data");
    ladder_tensor_free(&back);
    ladder_tensor_free(&t);
    free(copy);
    return 0;
}
