// The L2 switch's whole-frame GPU path: its frame core (l2_core.h) in the shared runner (gpu/frame_runner.cuh).
#include "apps/l2/l2_core.h"
#include "gpu/frame_runner.cuh"

TANDEM_REGISTER_FRAME_CORE(tandem::l2::L2FrameCore)
