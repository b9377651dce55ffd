/**
 * @file ladder.h
 * @brief Everything a user of ladder includes: status, tensors, rungs, the algorithms, and the helpers.
 */
#ifndef LADDER_H
#define LADDER_H

#include "check.h"
#include "compare.h"
#include "dynconv.h"
#include "engine.h"
#include "flash.h"
#include "flex.h"
#include "gpu.h"
#include "half.h"
#include "memeff.h"
#include "mirror.h"
#include "npy.h"
#include "philox.h"
#include "recurrent.h"
#include "rng.h"
#include "rung.h"
#include "status.h"
#include "tensor.h"

#endif
