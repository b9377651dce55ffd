/*
 * gpu_tensorcore/attention_flex_bwd_d128.cu: flex's tensor-core backward (Delta, dK/dV, the deterministic dQ) compiled
 * for the head dims (HD, HDV) = (128, 128), in bf16 and fp16, with the policy flex<MOD> for every registered score mod
 * (attention_tc.cuh). The kernels are in attention_tc_bwd.cuh; each pass and head dim has a file of its own, so that a
 * full build compiles them side by side.
 */
#include "attention_tc_bwd.cuh"

namespace attn_tc {
template ladder_status bwd_flex<128>(const args &, int, ladder_dtype, bool *);
template int bwd_flex_rows<128>(int);
} // namespace attn_tc
