#include "mirror.h"

#include <string.h>

#include "gpu.h"

ladder_status ladder_mirror_begin(ladder_mirror *m, ladder_tensor *const *ins, int n_in, ladder_tensor *const *outs,
                                  int n_out) {
    memset(m, 0, sizeof *m);
    if (n_in + n_out > LADDER_MIRROR_MAX)
        return ladder_fail(LADDER_ERR_ARG, "cannot mirror %d tensors (at most %d)", n_in + n_out, LADDER_MIRROR_MAX);
    m->n_in = n_in;
    for (int i = 0; i < n_in + n_out; i++) {
        ladder_tensor *t = i < n_in ? ins[i] : outs[i - n_in];
        m->slot[i] = t;
        m->host[i] = *t;
        m->n = i + 1;
        if (!t->data) continue;
        ladder_status st = i < n_in ? ladder_gpu_upload(&m->host[i], t)
                                    : ladder_gpu_alloc_poisoned(t, t->dtype, t->rank, t->shape);
        if (st != LADDER_OK) {
            ladder_gpu_free(t); /* frees what was allocated before the failing copy, if anything */
            ladder_mirror_end(m, false);
            return st;
        }
    }
    return LADDER_OK;
}

ladder_status ladder_mirror_end(ladder_mirror *m, bool download) {
    ladder_status st = LADDER_OK;
    for (int i = 0; i < m->n; i++) {
        ladder_tensor *t = m->slot[i];
        if (download && i >= m->n_in && t->data && st == LADDER_OK) st = ladder_gpu_download(t, &m->host[i]);
        if (t->data) ladder_gpu_free(t);
        *t = m->host[i];
    }
    m->n = 0;
    return st;
}
