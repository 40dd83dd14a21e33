// Echo's whole-frame GPU path: its frame core (echo_core.h) in the shared runner (gpu/frame_runner.cuh).
#include "apps/echo/echo_core.h"
#include "gpu/frame_runner.cuh"

TANDEM_REGISTER_FRAME_CORE(tandem::echo::EchoCore)
