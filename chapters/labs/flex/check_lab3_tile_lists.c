/*
 * chapters/labs/flex/check_lab3_tile_lists.c: checks Lab 3 (lab3_tile_lists, a CUDA kernel).
 * Run:  make lab LAB=lab3_tile_lists
 * Exit code: 0 PASS, 1 FAIL, 2 no CUDA GPU here (see ../labcheck.h).
 *
 * The expected lists are the library's builder's (ladder_flex_block_mask(), on the host) for the same mask and
 * buffers: count for count, and entry for entry within each count (the rest of a row is not read).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../labcheck.h"
#include "flex.h"
#include "gpu.h"
#include "lab.h"

static const char *const LAB = "lab3_tile_lists";

#define MASK(m) (1 << LADDER_FLEX_##m)
/* Sq, Sk, mask mods, window_left: one query tile, ragged ends, Sq != Sk, rows of more key tiles than a block has
 * threads (Sk = 40000: 313 key tiles), and chapter 5's figures (1536 tokens in four documents) */
static const int64_t shapes[][4] = {
    {100, 90, MASK(CAUSAL), -1},
    {300, 300, MASK(CAUSAL), -1},
    {700, 450, MASK(WINDOW), 200},
    {129, 900, MASK(CAUSAL) | MASK(WINDOW), 300},
    {1536, 1536, MASK(DOCUMENT) | MASK(CAUSAL), -1},
    {257, 40000, MASK(DOCUMENT), -1},
    {300, 40000, MASK(WINDOW), 20000},
};

/* Documents of 420, 150, 610 and 356 tokens (those of the chapter's figures), then of 1000 tokens each: position x's
 * document, for queries and keys alike. */
static int32_t document_of(int64_t x) {
    static const int64_t lens[] = {420, 150, 610, 356};
    for (int d = 0; d < 4; d++) {
        if (x < lens[d]) return d;
        x -= lens[d];
    }
    return (int32_t)(4 + x / 1000);
}

static ladder_tensor documents(int64_t n) {
    ladder_tensor t = labcheck_alloc(LADDER_I32, 1, &n);
    for (int64_t x = 0; x < n; x++) ((int32_t *)t.data)[x] = document_of(x);
    return t;
}

/* A device i32 array of @p n entries, and its contents back on the host (freed by the caller). */
static int32_t *read_back(const ladder_tensor *dev, int64_t n) {
    int32_t *host = malloc((size_t)n * sizeof *host);
    if (!host) labcheck_ok(LAB, LADDER_ERR_NOMEM, "allocating the lists read back");
    labcheck_ok(LAB, ladder_gpu_read_i32(dev->data, n, host), "reading the lists back");
    return host;
}

static bool check_one(int s) {
    const int64_t *sh = shapes[s];
    const ladder_flex_problem p = {.attn = {.B = 1, .Hq = 1, .Hkv = 1, .Sq = sh[0], .Sk = sh[1], .D = 1, .Dv = 1},
                                   .mask_mods = (int)sh[2], .window_left = sh[3]};
    const bool docs = (p.mask_mods >> LADDER_FLEX_DOCUMENT) & 1;
    ladder_flex_args a = {0}, want = {0}, dev = {0};
    if (docs) a.doc_q = documents(p.attn.Sq), a.doc_k = documents(p.attn.Sk);
    labcheck_ok(LAB, ladder_flex_block_mask(&p, &a, &want), "building the expected lists");
    if (docs) {
        labcheck_ok(LAB, ladder_gpu_upload(&a.doc_q, &dev.doc_q), "uploading doc_q");
        labcheck_ok(LAB, ladder_gpu_upload(&a.doc_k, &dev.doc_k), "uploading doc_k");
    }
    const ladder_flex_env e = ladder_flex_env_of(&p, &dev);
    const int64_t Tq = ladder_flex_tiles(p.attn.Sq), Tk = ladder_flex_tiles(p.attn.Sk), rows[2] = {Tq, Tq * Tk};
    ladder_tensor out[4] = {{0}}; /* kv_num, kv_idx, full_kv_num, full_kv_idx on the device */
    for (int l = 0; l < 4; l++)
        labcheck_ok(LAB, ladder_gpu_alloc_poisoned(&out[l], LADDER_I32, 1, &rows[l % 2]), "allocating the lists");
    ladder_status st = lab3_tile_lists((unsigned)p.mask_mods, &e, Tq, Tk, out[0].data, out[1].data, out[2].data,
                                       out[3].data);
    if (st == LADDER_OK) st = ladder_gpu_sync();
    char shape[96];
    snprintf(shape, sizeof shape, "Sq=%lld Sk=%lld mask_mod=%s%s%s", (long long)p.attn.Sq, (long long)p.attn.Sk,
             docs ? "document" : "", (p.mask_mods >> LADDER_FLEX_CAUSAL) & 1 ? (docs ? "+causal" : "causal") : "",
             (p.mask_mods >> LADDER_FLEX_WINDOW) & 1 ? ((p.mask_mods & MASK(CAUSAL)) ? "+window" : "window") : "");
    bool ok = st == LADDER_OK;
    if (!ok) printf("FAIL %s at %s: the kernel failed: %s\n", LAB, shape, ladder_last_error());
    const ladder_tensor *expect[4] = {&want.kv_num_blocks, &want.kv_indices, &want.full_kv_num_blocks,
                                      &want.full_kv_indices};
    static const char *const names[2] = {"partial (kv_indices)", "full (full_kv_indices)"};
    for (int kind = 0; kind < 2 && ok; kind++) {
        int32_t *num = read_back(&out[2 * kind], Tq), *idx = read_back(&out[2 * kind + 1], Tq * Tk);
        const int32_t *want_num = expect[2 * kind]->data, *want_idx = expect[2 * kind + 1]->data;
        for (int64_t tq = 0; tq < Tq && ok; tq++) {
            ok = num[tq] == want_num[tq] &&
                 memcmp(idx + tq * Tk, want_idx + tq * Tk, (size_t)want_num[tq] * sizeof(int32_t)) == 0;
            if (!ok)
                printf("FAIL %s at %s: query tile %lld's %s list has %d tiles, want %d (or differs in its entries)\n",
                       LAB, shape, (long long)tq, names[kind], num[tq], want_num[tq]);
        }
        free(num), free(idx);
    }
    for (int l = 0; l < 4; l++) ladder_gpu_free(&out[l]);
    ladder_gpu_free(&dev.doc_q), ladder_gpu_free(&dev.doc_k);
    ladder_tensor_free(&a.doc_q), ladder_tensor_free(&a.doc_k);
    ladder_tensor *all = &want.kv_num_blocks;
    for (int l = 0; l < 8; l++) ladder_tensor_free(&all[l]);
    return ok;
}

int main(void) {
    labcheck_require_gpu(LAB);
    const int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < n; s++)
        if (!check_one(s)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, n);
}
