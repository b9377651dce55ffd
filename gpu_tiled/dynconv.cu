/* placeholder so the library links while this rung is written; replaced before it lands */
#include "dynconv_rungs.h"
extern "C" ladder_status dynconv_fwd_gpu_tiled(const ladder_dynconv_problem *, const ladder_dynconv_args *) {
    return ladder_fail(LADDER_ERR_UNAVAILABLE, "gpu_tiled is not written yet");
}
extern "C" ladder_status dynconv_bwd_gpu_tiled(const ladder_dynconv_problem *, const ladder_dynconv_args *) {
    return ladder_fail(LADDER_ERR_UNAVAILABLE, "gpu_tiled is not written yet");
}
