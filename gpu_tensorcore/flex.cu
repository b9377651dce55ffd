/*
 * gpu_tensorcore/flex.cu: flex attention at the tensor-core rung: the attention family of attention_tc.cuh with flex's
 * policy (flex<MOD>: the score mod inlined, the mask mods in partial tiles, the key tiles from the block lists) and
 * the deterministic reduction of the buffer gradients around its backward (common/flex_gpu.cuh), as at gpu_tiled.
 *
 * What changed since gpu_tiled/: the five products run on the matrix units in the family's tensor-core kernels
 * (attention_tc_fwd.cuh, attention_tc_bwd.cuh), and flex enters them where flash's softcap and memeff's bias do: the
 * score mod takes the fp32 fragments of S = Q K^T (scale applied: natural units), element by element with its
 * position; a block-mask tile of 128 keys is two of this rung's 64-key tiles, and of 128 rows two or four of its query
 * tiles, the partial and full ones visited in ascending order, because the forward's rounding of P depends on the
 * order; the mask mods run in partial tiles only; the backward stores dS times the mod's slope as the 16-bit operand of
 * dQ and dK, and its dQ pass sums the buffers' shares per tile along their lines. On an sm_90 GPU the forward runs
 * the Hopper kernel (attention_flex_fwd.sm90a.cu) where TMA can describe q, k and v, and so does the backward's dK/dV
 * pass with dQ's adds in turns where no buffer's gradient is asked but alibi's slopes', which it sums per head
 * (attention_flex_bwd_d*.sm90a.cu).
 *
 * Preconditions: validated by ladder_flex_fwd/bwd, block lists present (q, k, v, do, o, dq, dk, dv all bf16 or all
 * fp16; lse, dlse, the buffers and their gradients f32; device pointers; any input strides; contiguous outputs;
 * D, Dv <= 128; Hq, B <= 65535).
 * Run it:  build/bin/ladder run flex --rung gpu_tensorcore --score_mod alibi --mask_mod causal [--dtype fp16]
 */
#include "attention_tc.cuh"
#include "attention_tc_hopper.cuh"

static attn_tc::args pack(const ladder_flex_problem *p, const ladder_flex_args *a) {
    const ladder_tensor none = {};
    attn_tc::args n = attn_tc::pack(&p->attn, a->q, a->k, a->v, none, none, a->o, a->lse, a->dout, a->dlse, a->dq,
                                    a->dk, a->dv);
    n.mask = LADDER_ATTN_NO_MASK; /* flex masks through its lists and mask mods alone (attn.mask is not read) */
    n.flex = ladder_flex_hooks_of(p, a);
    return n;
}

/* Do D and Dv run on the kernels for a head dim of 128 (else 64; flex.c refuses more)? */
static bool wide(const attn_tc::args &n) { return attn_tc::pick_head_dims(n.D, n.Dv).hd == 128; }

extern "C" ladder_status flex_fwd_gpu_tensorcore(const ladder_flex_problem *p, const ladder_flex_args *a) {
    const attn_tc::args n = pack(p, a);
    bool ran = false; /* the Hopper kernel, on an sm_90 GPU where TMA can describe the tensors */
    LADDER_TRY(wide(n) ? attn_tc::fwd_wgmma_flex<128>(n, p->score_mod, a->q.dtype, &ran)
                       : attn_tc::fwd_wgmma_flex<64>(n, p->score_mod, a->q.dtype, &ran));
    if (ran) return LADDER_OK;
    return wide(n) ? attn_tc::fwd_flex<128>(n, p->score_mod, a->q.dtype)
                   : attn_tc::fwd_flex<64>(n, p->score_mod, a->q.dtype);
}

extern "C" ladder_status flex_bwd_gpu_tensorcore(const ladder_flex_problem *p, const ladder_flex_args *a) {
    attn_tc::args n = pack(p, a);
    ladder_scratch delta; /* from the stream-ordered pool: after the first call it costs no cudaMalloc */
    LADDER_TRY(delta.alloc(sizeof(float) * (size_t)(n.B * n.Hq * n.Sq)));
    n.delta = (float *)delta.ptr;
    const int rows = wide(n) ? attn_tc::bwd_flex_rows<128>(p->score_mod) : attn_tc::bwd_flex_rows<64>(p->score_mod);
    return ladder_flex_with_mod(p->score_mod, [&](auto m) {
        return ladder_flex_bwd_with_dbuf<decltype(m)::value>(p, a, n.flex, rows, [&](bool *hopper) {
            return wide(n) ? attn_tc::bwd_flex<128>(n, p->score_mod, a->q.dtype, hopper)
                           : attn_tc::bwd_flex<64>(n, p->score_mod, a->q.dtype, hopper);
        });
    });
}
