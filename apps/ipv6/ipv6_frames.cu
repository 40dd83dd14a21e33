// The IPv6 router's whole-frame GPU path: its frame core (ipv6_core.h) in the shared runner (gpu/frame_runner.cuh).
#include "apps/ipv6/ipv6_core.h"
#include "gpu/frame_runner.cuh"

TANDEM_REGISTER_FRAME_CORE(tandem::ipv6::Ipv6FrameCore)
