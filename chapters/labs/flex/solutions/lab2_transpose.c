/* chapters/labs/flex/solutions/lab2_transpose.c: a reference solution of Lab 2. */
#include "../lab.h"

void lab2_transpose(int64_t Tq, int64_t Tk, const int32_t *kv_num, const int32_t *kv_idx, const int32_t *full_kv_num,
                    const int32_t *full_kv_idx, int32_t *q_num, int32_t *q_idx, int32_t *full_q_num,
                    int32_t *full_q_idx) {
    for (int64_t tk = 0; tk < Tk; tk++) q_num[tk] = full_q_num[tk] = 0;
    /* query tiles in ascending order, so that each key tile's list comes out ascending */
    for (int64_t tq = 0; tq < Tq; tq++) {
        for (int32_t e = 0; e < kv_num[tq]; e++) {
            const int32_t tk = kv_idx[tq * Tk + e];
            q_idx[tk * Tq + q_num[tk]++] = (int32_t)tq;
        }
        for (int32_t e = 0; e < full_kv_num[tq]; e++) {
            const int32_t tk = full_kv_idx[tq * Tk + e];
            full_q_idx[tk * Tq + full_q_num[tk]++] = (int32_t)tq;
        }
    }
}
