# Finds Tandem's dependencies. Everything comes from Debian/Ubuntu packages; on the GPU machine,
# which has no network, header-only packages and libpcap are carried as unpacked .deb trees whose
# root is passed as TANDEM_DEPS_ROOT (see scripts/device-run.sh).

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)

if(TANDEM_DEPS_ROOT)
  list(PREPEND CMAKE_PREFIX_PATH "${TANDEM_DEPS_ROOT}/usr" "${TANDEM_DEPS_ROOT}/usr/share/cmake")
endif()
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
find_package(GTest REQUIRED)

# libpcap: optional, so the GPU machine (which lacks it) can still build everything else.
find_path(PCAP_INCLUDE_DIR pcap/pcap.h HINTS ${TANDEM_DEPS_ROOT}/usr/include)
find_library(PCAP_LIBRARY NAMES pcap libpcap.so.0.8
  HINTS ${TANDEM_DEPS_ROOT}/usr/lib/x86_64-linux-gnu)
if(PCAP_INCLUDE_DIR AND PCAP_LIBRARY)
  set(TANDEM_HAVE_PCAP ON)
  add_library(PCAP::pcap UNKNOWN IMPORTED)
  set_target_properties(PCAP::pcap PROPERTIES IMPORTED_LOCATION "${PCAP_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${PCAP_INCLUDE_DIR}")
else()
  set(TANDEM_HAVE_PCAP OFF)
  message(WARNING "libpcap not found: pcap input/output is disabled in this build")
endif()

set(TANDEM_HAVE_CUDA OFF)
if(TANDEM_WITH_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc 13's C++20 flags; teach it.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    add_compile_options($<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
    find_package(CUDAToolkit REQUIRED)
    set(TANDEM_HAVE_CUDA ON)
    add_compile_definitions(TANDEM_HAVE_CUDA=1)
  else()
    message(STATUS "nvcc not found: building the CPU paths only")
  endif()
endif()
