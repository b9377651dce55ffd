/*
 * gpu_tensorcore/attention_tc_hopper.cuh: the tensor-core rung's Hopper generation as the launchers see it: which
 * generation runs (LADDER_TC_PATH), and the Hopper kernels' entry points (attention_fwd.sm90a.cu,
 * attention_flex_fwd.sm90a.cu, attention_bwd.sm90a.cu). Host code: it is included by files compiled for every
 * architecture, and names no sm_90a instruction. The Hopper kernels: the forwards of flash (ideas 1 to 3; idea 3 at a
 * head dim of 256 too), of memeff without split keys (idea 3, head dims as flash's; with a bias, up to 128) and of
 * flex (idea 3, head dims up to 128); the backward's dK/dV pass with dQ's adds (atomic, or ordered in deterministic
 * mode) with the plain policy (flash, memeff without hooks), the hooked one (memeff's bias, its gradient and
 * dropout) and flex's (deterministic, no buffer's gradient; at a head dim of 128 the mods that read no buffer),
 * head dims up to 128, under every value of LADDER_TC_PATH that picks Hopper. Every other backward is the mma.sync
 * one on every GPU.
 *
 * LADDER_TC_PATH, read at every call (so that a test can run both generations in one process):
 *   auto (or unset, or empty)  on sm_90 devices what wgmma picks (LADDER_TC_WGMMA_DEFAULT), elsewhere the mma.sync
 *                              kernels;
 *   mma                        the mma.sync kernels, on every GPU;
 *   wgmma                      the Hopper kernels wherever they cover the problem (fwd_ws_covers()), the mma.sync
 *                              ones elsewhere, with every Hopper idea written so far (today wgmma-3's kernel); on a
 *                              GPU other than sm_90 every call is refused (LADDER_ERR_UNAVAILABLE), as with the three
 *                              below;
 *   wgmma-1                    the same, with the first idea's kernel alone: wgmma from shared memory, each product
 *                              waited on as soon as it is issued (attn_fwd_wgmma_kernel), at head dims up to 128
 *                              (the mma.sync kernels past them);
 *   wgmma-2                    the same, with the second idea's kernel: the softmax of one key tile beside the P V
 *                              of the tile before it (attn_fwd_wgmma_pipe_kernel);
 *   wgmma-3                    the same, with the third idea's kernel: a producer warpgroup copies the tiles by TMA,
 *                              consumer warpgroups run the second idea's loop on them (attn_fwd_wgmma_ws_kernel),
 *                              where TMA can describe q, k and v (no packed sequences, inner stride 1, the other
 *                              strides multiples of 16 bytes); the second idea's kernel elsewhere (the mma.sync
 *                              ones past a head dim of 128); memeff and flex
 *                              take the Hopper kernel under auto, wgmma and wgmma-3 only, and the mma.sync ones
 *                              under wgmma-1 and wgmma-2 (those ideas exist for flash alone);
 *   anything else              refused (LADDER_ERR_ARG), the message naming LADDER_TC_PATH and what it takes.
 * So each idea stays timeable on its own: run the bench with wgmma-1, wgmma-2, wgmma-3 and mma in one lease.
 */
#ifndef LADDER_GPU_TENSORCORE_ATTENTION_TC_HOPPER_CUH
#define LADDER_GPU_TENSORCORE_ATTENTION_TC_HOPPER_CUH

#include "attention_tc.cuh"

/* 1: LADDER_TC_PATH=auto (the default) picks the Hopper kernels on sm_90 devices (0: the mma.sync ones everywhere). */
#define LADDER_TC_WGMMA_DEFAULT 1

namespace attn_tc {

/* *wgmma: whether this call runs the Hopper kernels (where they cover the problem), from LADDER_TC_PATH and the
 * current device. Fails on a value it does not know, and on a device other than sm_90 when wgmma is forced. */
ladder_status use_wgmma(bool *wgmma);

/* The head dims the Hopper forwards cover: D and Dv up to 128, run at (64, 64) or (128, 128) as pick_head_dims() pads
 * them (every idea's kernel); and, with every idea (the kernel of idea 3, fwd_ws), D and Dv both in 193..256, run
 * at (256, 256), so that each 64-column panel of a tile holds some of the tensor's columns. Everything else of
 * flash's problem (masks, windows, softcap, GQA, packed sequences, any strides) ideas 1 and 2 take; idea 3 needs
 * tensors TMA can describe. */
inline bool fwd_wgmma_covers(const args &a) { return a.D <= 128 && a.Dv <= 128; }
inline bool fwd_ws_covers(const args &a) {
    return fwd_wgmma_covers(a) || (a.D > 192 && a.D <= 256 && a.Dv > 192 && a.Dv <= 256);
}

/* The Hopper forward of plain attention (o and lse, in @p dtype, bf16 or f16), the kernel LADDER_TC_PATH names
 * (wgmma-1, wgmma-2 or wgmma-3; wgmma and auto: the one with every idea), where use_wgmma() says Hopper and that
 * kernel covers the problem (idea 3 where TMA cannot describe the tensors: idea 2's, at head dims up to 128): *ran
 * true. Else nothing is launched, *ran is false, and the caller runs the mma.sync kernels. */
ladder_status fwd_wgmma(const args &a, ladder_dtype dtype, bool *ran);

/* *yes: this call may run the Hopper kernel with every idea: use_wgmma() says Hopper, and LADDER_TC_PATH asks for
 * every idea (auto or unset, wgmma, wgmma-3). Memeff's and flex's forwards take the Hopper kernel then only (ideas 1
 * and 2 alone exist for flash). */
ladder_status use_every_idea(bool *yes);

/* Memeff's forward on the Hopper kernel with every idea, with the hooked policy (dropout, a bias; with_hooks) or the
 * plain one, where LADDER_TC_PATH and the device allow it (use_every_idea()) and the kernel covers the problem
 * (fwd_ws_covers(), no split keys, tensors TMA can describe; a bias at head dims up to 128, broadcast over batch rows
 * and heads at most): *ran true. Else nothing is launched, *ran is false, and the caller runs the mma.sync kernels. */
ladder_status fwd_wgmma_memeff(const args &a, bool with_hooks, ladder_dtype dtype, bool *ran);

/* The same for flex's forward with score mod @p mod at head dims (HD, HD) (attention_flex_fwd.sm90a.cu). */
template <int HD> ladder_status fwd_wgmma_flex(const args &a, int mod, ladder_dtype dtype, bool *ran);

/* The backward's dK/dV pass with dQ's adds into a.dq_accum (which it zeroes first; by bulk reductions in any order,
 * or @p deterministic, in a fixed order of turns) on the Hopper kernel, policy Pol (plain or hooked), at head dims
 * (HD, HD) (attention_tc_hopper_bwd.cuh), where use_wgmma() says Hopper and the kernel covers the problem (packed
 * sequences with the plain policy's atomic dQ only, D a multiple of 4, tensors TMA can describe; with the hooks,
 * dropout's draws starting on multiples of four, a bias broadcast over batch rows and heads at most, its gradient
 * in its own storage): *ran true. In deterministic mode the accumulator is allocated into
 * @p accum, which the caller keeps until dQ's conversion has read it, and a.dq_accum set to it. Else nothing is
 * launched, *ran is false, and the caller runs the mma.sync passes. */
template <class Pol, class T, int HD>
ladder_status bwd_wgmma_dkdv(args &a, bool deterministic, ladder_scratch *accum, bool *ran);

/* The same for flex's backward with score mod @p mod at head dims (HD, HD), in @p dtype, in deterministic mode, where
 * no buffer's gradient is asked or only alibi's slopes', which it then sums per head into the first Hq floats of
 * a.flex.part[0] (attention_flex_bwd_d*.sm90a.cu). */
template <int HD> ladder_status bwd_wgmma_flex(args &a, int mod, ladder_dtype dtype, ladder_scratch *accum, bool *ran);

} // namespace attn_tc

#endif
