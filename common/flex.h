/**
 * @file flex.h
 * @brief Flex attention (PyTorch FlexAttention): softmax attention whose scores pass through a score_mod, with
 *        its gradients to the score and to the buffers it reads, and whose mask is a conjunction of mask_mods,
 *        visited through block masks of empty, partial and full tiles. The public API.
 *
 * Forward, with s_ij = scale * q_i . k_j (the mods are common/flex_mods.h):
 *
 *     S_ij = score_mod(s_ij, b, h, i, j)       where allowed(b, h, i, j), else -inf
 *     P = softmax(S) row by row,  lse_i = logsumexp_j S_ij,  O = P V
 *
 * allowed() comes from the block mask: the Sq x Sk plane is cut into tiles of LADDER_FLEX_BLOCK rows and keys;
 * a tile listed as full is allowed everywhere (the mask_mod is not evaluated there), a tile listed as partial is
 * allowed where every mask_mod of the problem says so (and inside Sq x Sk), any other tile nowhere (never
 * visited). Without lists, the dispatcher builds them from the mask_mods (ladder_flex_block_mask()), so that
 * allowed() is exactly the conjunction of the mask_mods. A fully masked row gives o = 0, lse = -inf and zero
 * gradients.
 *
 * Backward, given dO (and optionally dlse), recomputing P:
 *
 *     Delta_i = rowsum(dO_i * O_i) - dlse_i,  dV = P^T dO,  dP = dO V^T,  dS = P * (dP - Delta)
 *     ds = dS * dS/ds,  dQ = scale * ds K,  dK = scale * ds^T Q
 *     d<buffer>[x] = sum over every (b, h, i, j) whose score read x of dS_ij * dS_ij/dx
 *
 * A buffer's gradient is a reduction over every score that read the element: every rung sums it in a fixed
 * order (never atomics), so that it repeats bit for bit.
 *
 * Block lists (all i32, contiguous; MB is 1 or B, MH is 1 or Hq: a mask that reads neither b nor h is built once,
 * Tq = ceil(Sq / LADDER_FLEX_BLOCK), Tk = ceil(Sk / LADDER_FLEX_BLOCK)):
 *
 *     kv_num_blocks [MB,MH,Tq], kv_indices [MB,MH,Tq,Tk]: query tile tq's partial key tiles, the first
 *         kv_num_blocks of its row, ascending (the rest of the row is not read);
 *     full_kv_num_blocks, full_kv_indices: its full key tiles, the same way;
 *     q_num_blocks [MB,MH,Tk], q_indices [MB,MH,Tk,Tq], full_q_num_blocks, full_q_indices: the backward's
 *         transposed lists, key tile tk's partial and full query tiles.
 *
 * Given lists must come all eight together, sorted, in range, no tile both partial and full, and the backward's
 * exactly the transpose of the forward's. Memory is proportional to the number of tiles, never Sq x Sk.
 *
 * Tensors: q [B,Hq,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv] (any strides); the mods' buffers (any strides):
 * slopes [Hq], rel_bias [Hq,Sq+Sk-1], t5_bias [Hq,num_buckets], bq [Hq,Sq], bk [Hq,Sk] (f32 at every rung, as lse:
 * the mods compute in float), prefix [B], doc_q [Sq], doc_k [Sk] (i32). A buffer the problem's mods read must be
 * given; one they do not read may be given too (its gradient is then 0). Outputs o [B,Hq,Sq,Dv], lse [B,Hq,Sq] (f32),
 * dq, dk, dv and, for each float buffer given, its gradient d<buffer> (optional: computed when given; f32,
 * contiguous, the buffer's shape).
 *
 * | rung           | q, k, v, do; o, dq, dk, dv | lse, dlse, buffers, d<buffer> | head dims                       |
 * |----------------|----------------------------|-------------------------------|---------------------------------|
 * | cpu            | f32                        | f32                           | 1..256                          |
 * | gpu_naive      | f32                        | f32                           | 1..256                          |
 * | gpu_tiled      | f32                        | f32                           | 1..256                          |
 * | gpu_tensorcore | bf16 or f16 (all the same) | f32                           | 1..128 (kernels for 64 and 128) |
 *
 * The CPU rung takes host pointers, the GPU rungs device pointers (buffers and block lists included). Every rung is
 * deterministic, buffer gradients included.
 */
#ifndef LADDER_FLEX_H
#define LADDER_FLEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attention.h"
#include "flex_mods.h"
#include "rung.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Largest head dim (D and Dv) of the tensor-core rung. Its kernels are compiled for every score mod and dtype at each
 * head dim they take: flash's three wider pairs (192, 192 with 128, 256) beside 64 and 128 would more than double
 * them, and the build time with them. Larger head dims run at the other rungs.
 */
#define LADDER_FLEX_TC_MAX_HEAD_DIM 128

/** One flex problem: the attention problem (no mask, no softcap of its own: those are mods) and the mods. */
typedef struct ladder_flex_problem {
    ladder_attention_problem attn; /**< sizes and scale; attn.mask.causal and attn.softcap must be 0 (flex masks and
                                        caps through its mods) and attn.mask's windows are not read */
    int score_mod;                 /**< a ::ladder_flex_score_id (0: none) */
    int mask_mods;                 /**< a set of (1 << ::ladder_flex_mask_id), ANDed together (0: none) */
    double softcap;                /**< the softcap mod's cap, > 0 with it (and ignored without) */
    int64_t window_left;           /**< the window mask's reach left of the diagonal: >= 0 with it, else -1 or more */
    int64_t num_buckets;           /**< t5_bias's buckets: >= 2 with it, else 0 or more */
} ladder_flex_problem;

/** The tensors of one flex call. Unused ones stay absent (data NULL). */
typedef struct ladder_flex_args {
    ladder_tensor q;                  /**< [B,Hq,Sq,D] queries */
    ladder_tensor k;                  /**< [B,Hkv,Sk,D] keys */
    ladder_tensor v;                  /**< [B,Hkv,Sk,Dv] values */
    ladder_tensor slopes;             /**< alibi: [Hq] */
    ladder_tensor rel_bias;           /**< rel_bias: [Hq,Sq+Sk-1] */
    ladder_tensor t5_bias;            /**< t5_bias: [Hq,num_buckets] */
    ladder_tensor bq;                 /**< bias_qk: [Hq,Sq] */
    ladder_tensor bk;                 /**< bias_qk: [Hq,Sk] */
    ladder_tensor prefix;             /**< prefix_lm: [B] i32 */
    ladder_tensor doc_q;              /**< document: [Sq] i32, the document of each query row */
    ladder_tensor doc_k;              /**< document: [Sk] i32, the document of each key */
    ladder_tensor kv_num_blocks;      /**< optional block list [MB,MH,Tq] i32 (all eight or none) */
    ladder_tensor kv_indices;         /**< [MB,MH,Tq,Tk] i32 */
    ladder_tensor full_kv_num_blocks; /**< [MB,MH,Tq] i32 */
    ladder_tensor full_kv_indices;    /**< [MB,MH,Tq,Tk] i32 */
    ladder_tensor q_num_blocks;       /**< [MB,MH,Tk] i32 */
    ladder_tensor q_indices;          /**< [MB,MH,Tk,Tq] i32 */
    ladder_tensor full_q_num_blocks;  /**< [MB,MH,Tk] i32 */
    ladder_tensor full_q_indices;     /**< [MB,MH,Tk,Tq] i32 */
    ladder_tensor o;                  /**< forward output [B,Hq,Sq,Dv]; read by the backward */
    ladder_tensor lse;                /**< forward output [B,Hq,Sq], f32 */
    ladder_tensor dout;               /**< backward input dO [B,Hq,Sq,Dv] (the file do.npy) */
    ladder_tensor dlse;               /**< optional backward input [B,Hq,Sq], f32 */
    ladder_tensor dq;                 /**< backward output [B,Hq,Sq,D] */
    ladder_tensor dk;                 /**< backward output [B,Hkv,Sk,D] */
    ladder_tensor dv;                 /**< backward output [B,Hkv,Sk,Dv] */
    ladder_tensor dslopes;            /**< optional backward output, slopes' shape */
    ladder_tensor drel_bias;          /**< optional backward output, rel_bias's shape */
    ladder_tensor dt5_bias;           /**< optional backward output, t5_bias's shape */
    ladder_tensor dbq;                /**< optional backward output, bq's shape */
    ladder_tensor dbk;                /**< optional backward output, bk's shape */
} ladder_flex_args;

/** Forward: writes o and lse. Validates everything first (the error names the argument); nothing written then. */
ladder_status ladder_flex_fwd(ladder_rung rung, const ladder_flex_problem *problem, const ladder_flex_args *args);

/** Backward: writes dq, dk, dv and each d<buffer> given. Validation as for ladder_flex_fwd(). */
ladder_status ladder_flex_bwd(ladder_rung rung, const ladder_flex_problem *problem, const ladder_flex_args *args);

/* ---- the registry --------------------------------------------------------------------------------------------- */

/** A buffer a mod may read: its name (the args field and the .npy file), shape, dtype and gradient. */
typedef struct ladder_flex_buffer_spec {
    const char *name;   /**< "slopes" */
    const char *dims;   /**< its shape as sizes: "Hq", "Hq,R" (R = Sq + Sk - 1), "Hq,num_buckets", "B", "Sq", ... */
    ladder_dtype dtype; /**< f32 (at the float rungs; a buffer with a gradient) or i32 (an index, no gradient) */
    size_t arg;         /**< offsetof(ladder_flex_args, the buffer) */
    size_t grad;        /**< offsetof(ladder_flex_args, its gradient); 0: none (an i32 buffer) */
    size_t env;         /**< offsetof(ladder_flex_env, the buffer) */
} ladder_flex_buffer_spec;

/** A registered score mod: its name, id and the buffers its reads take, in the order of ladder_flex_grad's reads. */
typedef struct ladder_flex_score_spec {
    const char *name;                         /**< "alibi": what --score_mod takes */
    int id;                                   /**< its ::ladder_flex_score_id */
    int n_reads;                              /**< buffer elements each score reads */
    const char *reads[LADDER_FLEX_MAX_READS]; /**< read r's buffer, by name */
    const char *help;                         /**< one line */
} ladder_flex_score_spec;

/** A registered mask mod: its name, id, buffers and whether it depends on the batch row or the head. */
typedef struct ladder_flex_mask_spec {
    const char *name;       /**< "document": what --mask_mod takes (joined with '+') */
    int id;                 /**< its ::ladder_flex_mask_id */
    int n_buffers;          /**< buffers it reads */
    const char *buffers[2]; /**< their names */
    bool reads_b;           /**< its answer depends on the batch row: block lists per batch row */
    bool reads_h;           /**< its answer depends on the head: block lists per head */
    const char *help;       /**< one line */
} ladder_flex_mask_spec;

/** Most buffers the registry holds. */
#define LADDER_FLEX_MAX_BUFFERS 16

/** Every buffer a mod may read. */
extern const ladder_flex_buffer_spec ladder_flex_buffers[];
/** How many. */
extern const int ladder_flex_n_buffers;
/** Every score mod, in id order. */
extern const ladder_flex_score_spec ladder_flex_score_mods[];
/** How many (::LADDER_FLEX_SCORE_COUNT). */
extern const int ladder_flex_n_score_mods;
/** Every mask mod, in id order. */
extern const ladder_flex_mask_spec ladder_flex_mask_mods[];
/** How many (::LADDER_FLEX_MASK_COUNT). */
extern const int ladder_flex_n_mask_mods;

/** The buffer called @p name, or NULL. */
const ladder_flex_buffer_spec *ladder_flex_buffer(const char *name);
/** Its shape in @p problem (rank returned, -1 for an unknown size name). */
int ladder_flex_buffer_shape(const ladder_flex_problem *p, const ladder_flex_buffer_spec *buf, int64_t *shape);
/** "alibi" into its id (*id); LADDER_ERR_ARG naming every registered score mod otherwise. */
ladder_status ladder_flex_score_parse(const char *text, int *id);
/** "causal+document" into a mask set (*set); "none" or "" is the empty set; LADDER_ERR_ARG naming the unknown one. */
ladder_status ladder_flex_mask_parse(const char *text, int *set);
/** The mask set @p set as names joined with '+' ("none" when empty). */
void ladder_flex_mask_str(int set, char *buf, size_t n);
/** True when buffer @p name is read by the problem's score mod or one of its mask mods. */
bool ladder_flex_reads(const ladder_flex_problem *p, const char *name);
/** The mods' view of @p p and the buffers of @p a (host or device pointers alike). */
ladder_flex_env ladder_flex_env_of(const ladder_flex_problem *p, const ladder_flex_args *a);

/* ---- block masks ------------------------------------------------------------------------------------------------ */

/** Tiles along a length: ceil(L / LADDER_FLEX_BLOCK). */
int64_t ladder_flex_tiles(int64_t L);
/** MB and MH of the lists the builder makes for @p p: B or 1, Hq or 1, as the mask mods read b and h. */
void ladder_flex_block_dims(const ladder_flex_problem *p, int64_t *MB, int64_t *MH);

/**
 * Build the eight block lists of @p p's mask mods into @p lists (the args fields kv_num_blocks .. full_q_indices,
 * allocated here on the host, ladder_tensor_free() each) from the host buffers in @p a: each tile's kind is the mask
 * evaluated over its elements (ladder_flex_tile_kind()), then each row and column of kinds becomes its lists.
 */
ladder_status ladder_flex_block_mask(const ladder_flex_problem *p, const ladder_flex_args *a, ladder_flex_args *lists);

#ifdef __cplusplus
}
#endif
#endif
