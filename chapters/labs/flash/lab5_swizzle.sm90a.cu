/*
 * chapters/labs/flash/lab5_swizzle.sm90a.cu: Lab 5, the scores of one tile on Hopper's wgmma, read from operands
 * that TMA copied in the 128-byte swizzle (needs an sm_90 GPU: H100, H200; compiled for sm_90a alone).
 *
 * s = q k^T for 64 query rows and 64 keys, head dim D = 64 or 128, bf16 in and fp32 out, by one warpgroup: the
 * launcher makes the tensor maps, the kernel copies q and k by TMA (one copy per panel of 64 columns) and waits for
 * them on an mbarrier, issues one wgmma m64n64k16 per k16 step with both operands read from shared memory, and
 * stores the accumulators. All of that is written. Write lab5_step_desc(): the descriptor that tells the tensor
 * cores where step kk of an operand lies and how it is laid out. Which field says the layout is the 128-byte
 * swizzle, and which of the two strides does a K-major operand in that layout use? How far apart are two groups
 * of 8 rows? In which panel does step kk lie, and how many bytes into its rows does it start? Why may a
 * descriptor's start address point into the middle of a swizzled row?
 * Check it (on a machine with an sm_90 GPU and nvcc):  make lab LAB=lab5_swizzle.sm90a
 */
#include <stdint.h>

#include "cuda_check.cuh"
#include "lab.h"
#include "tma.cuh"
#include "wgmma.cuh"

constexpr int ROWS = 64;     /* query rows, and keys, of the tile */
constexpr int MAX_D = 128;   /* two panels of 64 columns at most */

/*
 * The wgmma descriptor of k16 step kk (columns 16 kk .. 16 kk + 15) of a K-major operand of ROWS rows, stored from
 * @p tile in the 128-byte swizzle as TMA writes it here: panels of 64 columns (panel p: columns 64p .. 64p + 63,
 * ROWS rows of 128 bytes, at tile + p * ROWS * 64), each 1024-byte aligned, each row's eight 16-byte pieces permuted
 * within its group of 8 rows. common/wgmma.cuh has the descriptor's fields (ladder_wgmma_desc) and draws the layout.
 */
__device__ uint64_t lab5_step_desc(const uint16_t *tile, int kk) {
    /* TODO(lab 5): the descriptor of step kk of the operand at tile. */
    (void)tile, (void)kk;
    return 0;
}

/* One warpgroup: thread 0 copies q and k by TMA (one copy a panel), every thread waits for the bytes on the
 * mbarrier, and the warpgroup multiplies, k16 step after k16 step, then stores its accumulators (the layout of
 * common/wgmma.cuh: warp w holds rows 16w .. 16w + 15). */
__global__ void __launch_bounds__(128) lab5_kernel(int D, const __grid_constant__ CUtensorMap tq,
                                                   const __grid_constant__ CUtensorMap tk, float *s) {
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint16_t *Qs = (uint16_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023), *Ks = Qs + ROWS * MAX_D;
    __shared__ uint64_t full;
    if (threadIdx.x == 0) {
        ladder_mbarrier_init(&full, 1);
        ladder_mbarrier_init_fence();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        ladder_mbarrier_expect(&full, (uint32_t)(2 * 2 * ROWS * D));
        for (int c = 0; c < D; c += 64) {
            ladder_tma_load(Qs + c * ROWS, &tq, &full, c, 0, 0, 0);
            ladder_tma_load(Ks + c * ROWS, &tk, &full, c, 0, 0, 0);
        }
    }
    ladder_mbarrier_wait(&full, 0);
    float acc[ROWS / 8][4];
    ladder_wgmma_fence();
    for (int kk = 0; kk < D / 16; kk++)
        ladder_wgmma_ss<__nv_bfloat16, ROWS, false>(acc, lab5_step_desc(Qs, kk), lab5_step_desc(Ks, kk), kk > 0);
    ladder_wgmma_commit();
    ladder_wgmma_wait<0>();
    ladder_wgmma_hold(acc);
    const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
    for (int i = 0; i < ROWS / 8; i++)
        for (int c = 0; c < 4; c++) s[(16 * warp + g + 8 * (c / 2)) * ROWS + 8 * i + 2 * t + c % 2] = acc[i][c];
}

extern "C" ladder_status lab5_swizzle(int64_t D, const uint16_t *q, const uint16_t *k, float *s) {
    int dev = 0, major = 0, minor = 0;
    LADDER_CUDA_TRY(cudaGetDevice(&dev));
    LADDER_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    LADDER_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major != 9 || minor != 0)
        return ladder_fail(LADDER_ERR_UNAVAILABLE, "lab 5 needs an sm_90 GPU (H100, H200); this one is sm_%d%d", major,
                           minor);
    const int64_t strides[4] = {ROWS * D, ROWS * D, D, 1};
    CUtensorMap tq, tk;
    if (!ladder_tma_map_16bit(&tq, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, q, 1, 1, ROWS, D, strides, ROWS) ||
        !ladder_tma_map_16bit(&tk, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, k, 1, 1, ROWS, D, strides, ROWS))
        return ladder_fail(LADDER_ERR_CUDA, "lab 5: the tensor maps of q and k could not be made");
    const size_t shared = 1024 + 2 * sizeof(uint16_t) * ROWS * MAX_D; /* alignment slack, q, k */
    LADDER_CUDA_TRY(cudaFuncSetAttribute(lab5_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    lab5_kernel<<<1, 128, shared>>>((int)D, tq, tk, s);
    LADDER_LAUNCH_CHECK("lab5_kernel");
    return LADDER_OK;
}
