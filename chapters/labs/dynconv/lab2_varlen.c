/*
 * chapters/labs/dynconv/lab2_varlen.c: Lab 2, a test that catches variable-length bugs (CPU).
 *
 * This lab asks for a test, not a kernel. lab2_varlen_test(fwd) is given a forward for one batch row
 * of packed sequences (lab.h, lab2_fwd_fn) and returns true when it is right, false when it is wrong.
 * The checker hands your test two correct forwards and six broken ones, each with a bug that people
 * really write when they add cu_seqlens. You pass when your test accepts both correct ones and
 * rejects all six broken ones. (The broken forwards are in check_lab2_varlen.c. Try the lab before
 * you read them: finding the inputs that expose a bug is the point.)
 *
 * The property to test: packing is invisible. A packed row gives, token for token, the outputs that
 * each of its sequences gives when it is run alone (cu_seqlens == NULL, T = its length). Choose the
 * sequence lengths and W so that every way of getting the boundaries wrong changes some output. And
 * remember that a test which compares fwd only with itself cannot see a bug that both sides share:
 * anchor it once, against something you trust (the library's cpu rung, ladder_dynconv_fwd with
 * LADDER_RUNG_CPU, or a loop you write here). Fill the outputs with NaN before each call (see
 * ladder_tensor_poison), so that a token the forward never writes cannot pass by accident.
 * Check it:  make lab LAB=lab2_varlen
 */
#include "lab.h"

bool lab2_varlen_test(lab2_fwd_fn fwd) {
    /* TODO(lab 2): run fwd on packed rows and on their sequences alone, compare, return false on any
     * difference; anchor fwd once against a forward you trust. */
    (void)fwd;
    return true;
}
