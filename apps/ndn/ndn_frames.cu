// NDN forwarding's whole-frame GPU path: its frame core (ndn_core.h) in the shared runner (gpu/frame_runner.cuh).
#include "apps/ndn/ndn_core.h"
#include "gpu/frame_runner.cuh"

TANDEM_REGISTER_FRAME_CORE(tandem::ndn::NdnFrameCore)
