/*
 * flex's block masks on the host: building the lists from the mask mods (the cpu rung's builder), allocating them
 * for a call, and validating lists a caller gives (see flex.h for the layout).
 *
 * Building is two steps, both with memory proportional to the number of tiles: each tile's kind (empty, partial or
 * full: the mask evaluated over the tile's elements, ladder_flex_tile_kind()), one byte per tile; then each row of
 * kinds becomes a query tile's key lists (the forward's) and each column a key tile's query lists (the backward's,
 * the transpose), by ladder_flex_list_row(). The GPU rungs run the same two steps as kernels (gpu_naive/flex.cu).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flex_rungs.h"
#include "gpu.h"

int64_t ladder_flex_tiles(int64_t L) { return (L + LADDER_FLEX_BLOCK - 1) / LADDER_FLEX_BLOCK; }

void ladder_flex_block_dims(const ladder_flex_problem *p, int64_t *MB, int64_t *MH) {
    bool reads_b = false, reads_h = false;
    for (int m = 0; m < ladder_flex_n_mask_mods; m++)
        if ((p->mask_mods >> ladder_flex_mask_mods[m].id) & 1)
            reads_b |= ladder_flex_mask_mods[m].reads_b, reads_h |= ladder_flex_mask_mods[m].reads_h;
    *MB = reads_b ? p->attn.B : 1;
    *MH = reads_h ? p->attn.Hq : 1;
}

ladder_status flex_alloc_lists(const ladder_flex_problem *p, bool on_device, ladder_flex_args *a) {
    int64_t MB, MH;
    ladder_flex_block_dims(p, &MB, &MH);
    const int64_t Tq = ladder_flex_tiles(p->attn.Sq), Tk = ladder_flex_tiles(p->attn.Sk);
    ladder_tensor *lists = &a->kv_num_blocks;
    memset(lists, 0, 8 * sizeof *lists);
    for (int l = 0; l < 8; l++) {
        const bool bwd = l >= 4, indices = l % 2 == 1;
        const int64_t shape[4] = {MB, MH, bwd ? Tk : Tq, bwd ? Tq : Tk};
        const ladder_status st = on_device ? ladder_gpu_alloc_poisoned(&lists[l], LADDER_I32, indices ? 4 : 3, shape)
                                           : ladder_tensor_alloc(&lists[l], LADDER_I32, indices ? 4 : 3, shape);
        if (st != LADDER_OK) {
            flex_free_lists(on_device, a);
            return st;
        }
    }
    return LADDER_OK;
}

void flex_free_lists(bool on_device, ladder_flex_args *a) {
    ladder_tensor *lists = &a->kv_num_blocks;
    for (int l = 0; l < 8; l++) {
        if (on_device) ladder_gpu_free(&lists[l]);
        else ladder_tensor_free(&lists[l]);
    }
}

ladder_status flex_build_cpu(const ladder_flex_problem *p, const ladder_flex_args *a) {
    const flex_blocks k = flex_blocks_of(a);
    const ladder_flex_env env = ladder_flex_env_of(p, a);
    const int64_t n = k.MB * k.MH * k.Tq * k.Tk, rows = k.MB * k.MH;
    unsigned char *kind = malloc((size_t)n);
    if (!kind) return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate the kinds of %lld tiles", (long long)n);
    /* each tile's kind: the mask over its elements (a tile of a mask that reads neither b nor h is built once) */
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t t = 0; t < n; t++) {
        const int64_t tk = t % k.Tk, tq = t / k.Tk % k.Tq, h = t / (k.Tk * k.Tq) % k.MH, b = t / (k.Tk * k.Tq * k.MH);
        kind[t] = (unsigned char)ladder_flex_tile_kind((unsigned)p->mask_mods, &env, b, h, tq, tk);
    }
    /* the forward's lists are the rows of kinds, the backward's its columns */
    int32_t *kv_num = a->kv_num_blocks.data, *kv_idx = a->kv_indices.data, *fkv_num = a->full_kv_num_blocks.data,
            *fkv_idx = a->full_kv_indices.data, *q_num = a->q_num_blocks.data, *q_idx = a->q_indices.data,
            *fq_num = a->full_q_num_blocks.data, *fq_idx = a->full_q_indices.data;
#pragma omp parallel for
    for (int64_t r = 0; r < rows * k.Tq; r++)
        ladder_flex_list_row(kind + r * k.Tk, 1, k.Tk, kv_idx + r * k.Tk, &kv_num[r], fkv_idx + r * k.Tk, &fkv_num[r]);
#pragma omp parallel for
    for (int64_t c = 0; c < rows * k.Tk; c++) {
        const unsigned char *col = kind + c / k.Tk * k.Tq * k.Tk + c % k.Tk;
        ladder_flex_list_row(col, k.Tk, k.Tq, q_idx + c * k.Tq, &q_num[c], fq_idx + c * k.Tq, &fq_num[c]);
    }
    free(kind);
    return LADDER_OK;
}

ladder_status ladder_flex_block_mask(const ladder_flex_problem *p, const ladder_flex_args *a, ladder_flex_args *lists) {
    ladder_flex_args full = *a;
    ladder_status st = flex_alloc_lists(p, false, &full);
    if (st == LADDER_OK) st = flex_build_cpu(p, &full);
    if (st != LADDER_OK) {
        flex_free_lists(false, &full);
        return st;
    }
    memcpy(&lists->kv_num_blocks, &full.kv_num_blocks, 8 * sizeof(ladder_tensor));
    return LADDER_OK;
}

/*
 * One list set (partial, then full) into kinds: rows of counts @p num [R] and indices @p idx [R, W]; row r of batch
 * row and head rh = r / T, tile t = r % T, marks tile (t, index) (forward) or (index, t) (backward) of [rh, Tq, Tk].
 */
static ladder_status mark(unsigned char *kinds, const int32_t *num, const int32_t *idx, int64_t R, int64_t T,
                          int64_t W, bool bwd, int64_t Tk, int kind, const char *num_name, const char *idx_name) {
    for (int64_t r = 0; r < R; r++) {
        const int64_t rh = r / T, t = r % T;
        if (num[r] < 0 || num[r] > W)
            return ladder_fail(LADDER_ERR_ARG, "%s[%lld,%lld] (batch row/head %lld, tile %lld) is %d but must be in "
                               "0..%lld", num_name, (long long)rh, (long long)t, (long long)rh, (long long)t, num[r],
                               (long long)W);
        for (int64_t e = 0; e < num[r]; e++) {
            const int32_t x = idx[r * W + e];
            if (x < 0 || x >= W || (e > 0 && x <= idx[r * W + e - 1]))
                return ladder_fail(LADDER_ERR_ARG, "%s of batch row/head %lld, tile %lld: entry %lld is %d but the "
                                   "first %d entries must be ascending tile indices in 0..%lld", idx_name,
                                   (long long)rh, (long long)t, (long long)e, x, num[r], (long long)W - 1);
            const int64_t tq = bwd ? x : t, tk = bwd ? t : x;
            unsigned char *cell = &kinds[(rh * (bwd ? W : T) + tq) * Tk + tk];
            if (*cell != LADDER_FLEX_TILE_EMPTY)
                return ladder_fail(LADDER_ERR_ARG, "%s of batch row/head %lld lists tile (query %lld, key %lld) as "
                                   "full, but it is also listed as partial", idx_name, (long long)rh, (long long)tq,
                                   (long long)tk);
            *cell = (unsigned char)kind;
        }
    }
    return LADDER_OK;
}

ladder_status flex_check_lists(const ladder_flex_args *a) {
    const flex_blocks k = flex_blocks_of(a);
    const int64_t rows = k.MB * k.MH, n = rows * k.Tq * k.Tk;
    unsigned char *fwd = calloc((size_t)n, 1), *bwd = calloc((size_t)n, 1);
    ladder_status st = fwd && bwd ? LADDER_OK
                                  : ladder_fail(LADDER_ERR_NOMEM, "cannot allocate the kinds of %lld tiles", (long long)n);
    if (st == LADDER_OK)
        st = mark(fwd, k.kv_num, k.kv_idx, rows * k.Tq, k.Tq, k.Tk, false, k.Tk, LADDER_FLEX_TILE_PARTIAL,
                  "kv_num_blocks", "kv_indices");
    if (st == LADDER_OK)
        st = mark(fwd, k.full_kv_num, k.full_kv_idx, rows * k.Tq, k.Tq, k.Tk, false, k.Tk, LADDER_FLEX_TILE_FULL,
                  "full_kv_num_blocks", "full_kv_indices");
    if (st == LADDER_OK)
        st = mark(bwd, k.q_num, k.q_idx, rows * k.Tk, k.Tk, k.Tq, true, k.Tk, LADDER_FLEX_TILE_PARTIAL,
                  "q_num_blocks", "q_indices");
    if (st == LADDER_OK)
        st = mark(bwd, k.full_q_num, k.full_q_idx, rows * k.Tk, k.Tk, k.Tq, true, k.Tk, LADDER_FLEX_TILE_FULL,
                  "full_q_num_blocks", "full_q_indices");
    static const char *const kinds[] = {"empty", "partial", "full"};
    for (int64_t t = 0; t < n && st == LADDER_OK; t++)
        if (fwd[t] != bwd[t])
            st = ladder_fail(LADDER_ERR_ARG, "the backward's lists (q_indices, full_q_indices) are not the transpose of "
                             "the forward's: tile (query %lld, key %lld) of batch row/head %lld is %s in kv_indices/"
                             "full_kv_indices but %s in q_indices/full_q_indices", (long long)(t / k.Tk % k.Tq),
                             (long long)(t % k.Tk), (long long)(t / (k.Tq * k.Tk)), kinds[fwd[t]], kinds[bwd[t]]);
    free(fwd);
    free(bwd);
    return st;
}
