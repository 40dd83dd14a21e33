// The fw-router's whole-frame GPU path: its frame core (fw_router_core.h) in the shared runner (gpu/frame_runner.cuh).
#include "apps/fwrouter/fw_router_core.h"
#include "gpu/frame_runner.cuh"

TANDEM_REGISTER_FRAME_CORE(tandem::fwrouter::FwRouterFrameCore)
