// The packet hashing app's whole-frame GPU path: its frame core (hashing_core.h) in the shared
// runner (gpu/frame_runner.cuh).
#include "apps/hashing/hashing_core.h"
#include "gpu/frame_runner.cuh"

TANDEM_REGISTER_FRAME_CORE(tandem::hashing::HashingCore)
