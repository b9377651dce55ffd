/* flex's registry: the buffers, score mods and mask mods by name (see flex.h), and the mods' view of a problem. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "flex.h"

#define A(field) offsetof(ladder_flex_args, field)
#define E(field) offsetof(ladder_flex_env, field)

/* Every buffer a mod may read: one line each (a new buffer also needs its args and env fields, and its two
 * tensors in common/flex_desc.c, which name its .npy files). */
const ladder_flex_buffer_spec ladder_flex_buffers[] = {
    {"slopes", "Hq", LADDER_F32, A(slopes), A(dslopes), E(slopes)},
    {"rel_bias", "Hq,R", LADDER_F32, A(rel_bias), A(drel_bias), E(rel_bias)},
    {"t5_bias", "Hq,num_buckets", LADDER_F32, A(t5_bias), A(dt5_bias), E(t5_bias)},
    {"bq", "Hq,Sq", LADDER_F32, A(bq), A(dbq), E(bq)},
    {"bk", "Hq,Sk", LADDER_F32, A(bk), A(dbk), E(bk)},
    {"prefix", "B", LADDER_I32, A(prefix), 0, E(prefix)},
    {"doc_q", "Sq", LADDER_I32, A(doc_q), 0, E(doc_q)},
    {"doc_k", "Sk", LADDER_I32, A(doc_k), 0, E(doc_k)},
};
const int ladder_flex_n_buffers = sizeof ladder_flex_buffers / sizeof ladder_flex_buffers[0];
_Static_assert(sizeof ladder_flex_buffers / sizeof ladder_flex_buffers[0] <= LADDER_FLEX_MAX_BUFFERS,
               "raise LADDER_FLEX_MAX_BUFFERS");

/* Every score mod, in id order: its name, id, and the buffer each of its reads takes (common/flex_mods.h). */
const ladder_flex_score_spec ladder_flex_score_mods[] = {
    {"none", LADDER_FLEX_SCORE_NONE, 0, {NULL}, "S = s"},
    {"softcap", LADDER_FLEX_SOFTCAP, 0, {NULL}, "S = softcap * tanh(s / softcap)"},
    {"alibi", LADDER_FLEX_ALIBI, 1, {"slopes"}, "S = s + slopes[h] * (j - i)"},
    {"rel_bias", LADDER_FLEX_REL_BIAS, 1, {"rel_bias"}, "S = s + rel_bias[h, j - i + Sq - 1]"},
    {"t5_bias", LADDER_FLEX_T5_BIAS, 1, {"t5_bias"}, "S = s + t5_bias[h, bucket(j - i)]"},
    {"bias_qk", LADDER_FLEX_BIAS_QK, 2, {"bq", "bk"}, "S = s + bq[h, i] + bk[h, j]"},
};
const int ladder_flex_n_score_mods = sizeof ladder_flex_score_mods / sizeof ladder_flex_score_mods[0];
_Static_assert(sizeof ladder_flex_score_mods / sizeof ladder_flex_score_mods[0] == LADDER_FLEX_SCORE_COUNT,
               "one registry line per score mod id");

/* Every mask mod, in id order: its name, id, buffers, and whether its answer depends on b or h. */
const ladder_flex_mask_spec ladder_flex_mask_mods[] = {
    {"causal", LADDER_FLEX_CAUSAL, 0, {NULL}, false, false, "i >= j"},
    {"window", LADDER_FLEX_WINDOW, 0, {NULL}, false, false, "i - j <= window_left"},
    {"prefix_lm", LADDER_FLEX_PREFIX_LM, 1, {"prefix"}, true, false, "j < prefix[b] or i >= j"},
    {"document", LADDER_FLEX_DOCUMENT, 2, {"doc_q", "doc_k"}, false, false, "doc_q[i] == doc_k[j]"},
};
const int ladder_flex_n_mask_mods = sizeof ladder_flex_mask_mods / sizeof ladder_flex_mask_mods[0];
_Static_assert(sizeof ladder_flex_mask_mods / sizeof ladder_flex_mask_mods[0] == LADDER_FLEX_MASK_COUNT,
               "one registry line per mask mod id");

const ladder_flex_buffer_spec *ladder_flex_buffer(const char *name) {
    for (int i = 0; name && i < ladder_flex_n_buffers; i++)
        if (strcmp(ladder_flex_buffers[i].name, name) == 0) return &ladder_flex_buffers[i];
    return NULL;
}

int ladder_flex_buffer_shape(const ladder_flex_problem *p, const ladder_flex_buffer_spec *buf, int64_t *shape) {
    const struct {
        const char *name;
        int64_t v;
    } sizes[] = {{"B", p->attn.B},   {"Hq", p->attn.Hq}, {"Sq", p->attn.Sq}, {"Sk", p->attn.Sk},
                 {"R", p->attn.Sq + p->attn.Sk - 1}, {"num_buckets", p->num_buckets}};
    int rank = 0;
    for (const char *d = buf->dims; *d && rank < 2; rank++) { /* buffers have rank 1 or 2 */
        const size_t len = strcspn(d, ",");
        shape[rank] = -1;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            if (strlen(sizes[s].name) == len && strncmp(sizes[s].name, d, len) == 0) shape[rank] = sizes[s].v;
        if (shape[rank] < 0) return -1;
        d += len + (d[len] == ',');
    }
    return rank;
}

ladder_status ladder_flex_score_parse(const char *text, int *id) {
    char names[256] = "";
    for (int m = 0; m < ladder_flex_n_score_mods; m++) {
        if (strcmp(text, ladder_flex_score_mods[m].name) == 0) {
            *id = ladder_flex_score_mods[m].id;
            return LADDER_OK;
        }
        strncat(names, m ? ", " : "", sizeof names - strlen(names) - 1);
        strncat(names, ladder_flex_score_mods[m].name, sizeof names - strlen(names) - 1);
    }
    return ladder_fail(LADDER_ERR_ARG, "score_mod '%s' is not registered (the score mods are %s)", text, names);
}

ladder_status ladder_flex_mask_parse(const char *text, int *set) {
    *set = 0;
    if (strcmp(text, "none") == 0) return LADDER_OK;
    for (const char *p = text; *p;) {
        const size_t len = strcspn(p, "+");
        int found = -1;
        for (int m = 0; m < ladder_flex_n_mask_mods; m++)
            if (strlen(ladder_flex_mask_mods[m].name) == len && strncmp(ladder_flex_mask_mods[m].name, p, len) == 0)
                found = ladder_flex_mask_mods[m].id;
        if (found < 0) {
            char names[256] = "";
            for (int m = 0; m < ladder_flex_n_mask_mods; m++) {
                strncat(names, m ? ", " : "", sizeof names - strlen(names) - 1);
                strncat(names, ladder_flex_mask_mods[m].name, sizeof names - strlen(names) - 1);
            }
            return ladder_fail(LADDER_ERR_ARG, "mask_mod '%.*s' is not registered (the mask mods are %s, joined "
                               "with '+'; or none)", (int)len, p, names);
        }
        *set |= 1 << found;
        p += len + (p[len] == '+');
    }
    return LADDER_OK;
}

void ladder_flex_mask_str(int set, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int m = 0; m < ladder_flex_n_mask_mods && used < n; m++)
        if ((set >> ladder_flex_mask_mods[m].id) & 1) {
            const int k = snprintf(buf + used, n - used, "%s%s", used ? "+" : "", ladder_flex_mask_mods[m].name);
            used += k > 0 ? (size_t)k : 0;
        }
    if (!used) snprintf(buf, n, "none");
}

bool ladder_flex_reads(const ladder_flex_problem *p, const char *name) {
    for (int m = 0; m < ladder_flex_n_score_mods; m++) {
        const ladder_flex_score_spec *s = &ladder_flex_score_mods[m];
        for (int r = 0; s->id == p->score_mod && r < s->n_reads; r++)
            if (strcmp(s->reads[r], name) == 0) return true;
    }
    for (int m = 0; m < ladder_flex_n_mask_mods; m++) {
        const ladder_flex_mask_spec *s = &ladder_flex_mask_mods[m];
        for (int r = 0; ((p->mask_mods >> s->id) & 1) && r < s->n_buffers; r++)
            if (strcmp(s->buffers[r], name) == 0) return true;
    }
    return false;
}

ladder_flex_env ladder_flex_env_of(const ladder_flex_problem *p, const ladder_flex_args *a) {
    ladder_flex_env e = {.Sq = p->attn.Sq, .Sk = p->attn.Sk, .softcap = (float)p->softcap,
                         .window_left = p->window_left, .num_buckets = p->num_buckets};
    for (int i = 0; i < ladder_flex_n_buffers; i++) {
        const ladder_flex_buffer_spec *s = &ladder_flex_buffers[i];
        const ladder_tensor *t = (const ladder_tensor *)((const char *)a + s->arg);
        ladder_flex_buf *b = (ladder_flex_buf *)((char *)&e + s->env);
        b->p = t->data;
        b->s[0] = t->data ? t->strides[0] : 0;
        b->s[1] = t->data && t->rank > 1 ? t->strides[1] : 0;
    }
    return e;
}
