/* The recurrent rung functions by rung number: the dispatcher's table (see recurrent_rungs.h). */
#include "recurrent_rungs.h"

#ifdef LADDER_HAVE_CUDA
#define GPU(f) f
#else
#define GPU(f) NULL /* not built: the dispatcher reports the rung unavailable */
#endif

/* The GPU rungs are not written yet: the dispatcher reports them unavailable. */
const recurrent_fn recurrent_fwd_rungs[LADDER_RUNG_COUNT] = {recurrent_fwd_cpu, NULL, NULL, NULL};
const recurrent_fn recurrent_bwd_rungs[LADDER_RUNG_COUNT] = {recurrent_bwd_cpu, NULL, NULL, NULL};
