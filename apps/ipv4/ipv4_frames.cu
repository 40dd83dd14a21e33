// The IPv4 router's whole-frame GPU path: its frame core (ipv4_frame_core.h) in the shared runner (gpu/frame_runner.cuh).
#include "apps/ipv4/ipv4_frame_core.h"
#include "gpu/frame_runner.cuh"

TANDEM_REGISTER_FRAME_CORE(tandem::ipv4::Ipv4FrameCore)
