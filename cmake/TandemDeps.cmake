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
# OpenSSL 3: the CPU paths of the crypto apps (EVP) and the reference their GPU kernels are checked
# against.
find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)

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

# DPDK (optional): the comparators of `tandem bench anchors`, linked statically from the headers and
# .a files that scripts/fetch-dpdk.sh unpacks from Debian's libdpdk-dev (TANDEM_DPDK_ROOT).
set(TANDEM_DPDK_ROOT "${PROJECT_SOURCE_DIR}/.deps/dpdk" CACHE PATH "DPDK headers (include/) and static libraries (lib/)")
set(TANDEM_HAVE_DPDK OFF)
find_library(NUMA_LIBRARY NAMES numa libnuma.so.1)
if(EXISTS "${TANDEM_DPDK_ROOT}/lib/librte_mempool_ring.a" AND NUMA_LIBRARY)
  set(TANDEM_HAVE_DPDK ON)
  # Drivers (the ring mempool, buses, the `dpdk:` ports' PMDs) register themselves from
  # constructors: whole archives, or the linker drops them. Keep in step with scripts/fetch-dpdk.sh.
  set(dpdk_drivers mempool_ring)
  set(dpdk_libs acl fib rib lpm hash rcu net mbuf mempool ring eal telemetry kvargs)
  set(TANDEM_HAVE_DPDK_ETHDEV OFF)
  if(EXISTS "${TANDEM_DPDK_ROOT}/lib/librte_ethdev.a")
    set(TANDEM_HAVE_DPDK_ETHDEV ON)
    list(APPEND dpdk_drivers bus_vdev bus_pci net_af_packet net_memif net_ring net_tap net_virtio net_e1000 net_i40e
      net_ice net_iavf)
    list(APPEND dpdk_libs ethdev meter gso pci common_iavf)
    if(TARGET PCAP::pcap)
      list(APPEND dpdk_drivers net_pcap)
    endif()
  endif()
  set(dpdk_archives -Wl,--whole-archive)
  foreach(l ${dpdk_drivers})
    list(APPEND dpdk_archives "${TANDEM_DPDK_ROOT}/lib/librte_${l}.a")
  endforeach()
  list(APPEND dpdk_archives -Wl,--no-whole-archive)
  foreach(l ${dpdk_libs})
    list(APPEND dpdk_archives "${TANDEM_DPDK_ROOT}/lib/librte_${l}.a")
  endforeach()
  add_library(tandem_dpdk INTERFACE)
  target_include_directories(tandem_dpdk SYSTEM INTERFACE "${TANDEM_DPDK_ROOT}/include"
    "${PROJECT_SOURCE_DIR}/bench/compat")  # <bsd/string.h> for rte_string_fns.h (see there)
  target_compile_options(tandem_dpdk INTERFACE -include rte_config.h)
  # DPDK 22.11 calls strlcpy, which glibc has only from 2.38; older systems get it from libbsd.
  include(CheckSymbolExists)
  check_symbol_exists(strlcpy "string.h" TANDEM_LIBC_HAS_STRLCPY)
  set(dpdk_extra ${NUMA_LIBRARY} Threads::Threads ${CMAKE_DL_LIBS} m)
  if(TANDEM_HAVE_DPDK_ETHDEV AND TARGET PCAP::pcap)
    list(APPEND dpdk_extra PCAP::pcap)
  endif()
  if(NOT TANDEM_LIBC_HAS_STRLCPY)
    find_library(BSD_LIBRARY NAMES bsd libbsd.so.0)
    if(BSD_LIBRARY)
      list(APPEND dpdk_extra ${BSD_LIBRARY})
    else()
      set(TANDEM_HAVE_DPDK OFF)
      message(WARNING "DPDK needs strlcpy (glibc >= 2.38 or libbsd): DPDK comparators disabled")
    endif()
  endif()
  target_link_libraries(tandem_dpdk INTERFACE -Wl,--start-group ${dpdk_archives} -Wl,--end-group ${dpdk_extra})
endif()
if(TANDEM_HAVE_DPDK)
  message(STATUS "DPDK comparators: ${TANDEM_DPDK_ROOT}; dpdk: ports: ${TANDEM_HAVE_DPDK_ETHDEV}")
else()
  message(STATUS "DPDK not found (scripts/fetch-dpdk.sh): `tandem bench anchors` reports it and exits")
endif()

# Hyperscan (optional): DPI's CPU stage 1 where found (apps/dpi/hyperscan_patterns.h) and the
# comparator of `tandem bench dpi`, from Debian's libhyperscan-dev: its static archive where
# installed, else the shared object (unpacked into TANDEM_DEPS_ROOT for the GPU machine).
find_path(HS_INCLUDE_DIR hs/hs.h HINTS ${TANDEM_DEPS_ROOT}/usr/include)
find_library(HS_LIBRARY NAMES libhs.a hs HINTS ${TANDEM_DEPS_ROOT}/usr/lib/x86_64-linux-gnu)
set(TANDEM_HAVE_HYPERSCAN OFF)
if(HS_INCLUDE_DIR AND HS_LIBRARY)
  set(TANDEM_HAVE_HYPERSCAN ON)
  add_library(tandem_hyperscan INTERFACE)
  target_include_directories(tandem_hyperscan SYSTEM INTERFACE "${HS_INCLUDE_DIR}")
  target_link_libraries(tandem_hyperscan INTERFACE "${HS_LIBRARY}" m)
endif()

# intel-ipsec-mb (optional): the multi-buffer job API behind the ipsec app's batched CPU path
# (apps/ipsec/esp_ipsecmb.h). First the shared object and header that scripts/fetch-ipsec-mb.sh
# unpacks into .deps/ipsec-mb (Debian trixie's 2.0; carried to the GPU machine), else an installed
# libipsec-mb-dev. Linked by full path: CMake puts its directory into the build tree's RPATH,
# wherever the tree is built, so the binaries find it on the GPU machine too. Consumers link
# tandem_ipsec_mb, which is empty when the library is missing and otherwise brings it and
# TANDEM_HAVE_IPSEC_MB=1. TANDEM_IPSEC_MB_VERSION: its version, or OFF.
set(TANDEM_IPSEC_MB_ROOT "${PROJECT_SOURCE_DIR}/.deps/ipsec-mb" CACHE PATH
    "intel-ipsec-mb header (include/) and shared object (lib/)")
set(TANDEM_HAVE_IPSEC_MB OFF)
set(TANDEM_IPSEC_MB_VERSION OFF)
add_library(tandem_ipsec_mb INTERFACE)
file(GLOB ipsec_mb_carried "${TANDEM_IPSEC_MB_ROOT}/lib/libIPSec_MB.so.*")
if(EXISTS "${TANDEM_IPSEC_MB_ROOT}/include/intel-ipsec-mb.h" AND ipsec_mb_carried)
  set(IPSEC_MB_INCLUDE "${TANDEM_IPSEC_MB_ROOT}/include")
  list(GET ipsec_mb_carried 0 IPSEC_MB_SO)
else()
  find_path(IPSEC_MB_INCLUDE_DIR intel-ipsec-mb.h)
  find_library(IPSEC_MB_LIBRARY NAMES IPSec_MB)
  set(IPSEC_MB_INCLUDE "${IPSEC_MB_INCLUDE_DIR}")
  set(IPSEC_MB_SO "${IPSEC_MB_LIBRARY}")
endif()
if(IPSEC_MB_INCLUDE AND IPSEC_MB_SO)
  file(STRINGS "${IPSEC_MB_INCLUDE}/intel-ipsec-mb.h" ipsec_mb_version REGEX "^#define IMB_VERSION_STR ")
  string(REGEX REPLACE ".*\"(.*)\".*" "\\1" TANDEM_IPSEC_MB_VERSION "${ipsec_mb_version}")
  set(TANDEM_HAVE_IPSEC_MB ON)
  add_library(tandem_ipsec_mb_so SHARED IMPORTED)
  set_target_properties(tandem_ipsec_mb_so PROPERTIES IMPORTED_LOCATION "${IPSEC_MB_SO}")
  target_include_directories(tandem_ipsec_mb SYSTEM INTERFACE "${IPSEC_MB_INCLUDE}")
  target_link_libraries(tandem_ipsec_mb INTERFACE tandem_ipsec_mb_so)
  target_compile_definitions(tandem_ipsec_mb INTERFACE TANDEM_HAVE_IPSEC_MB=1)
  message(STATUS "intel-ipsec-mb ${TANDEM_IPSEC_MB_VERSION}: ${IPSEC_MB_SO}")
  if(TANDEM_IPSEC_MB_VERSION VERSION_LESS 1.4)
    message(WARNING "intel-ipsec-mb ${TANDEM_IPSEC_MB_VERSION} stores to a process-wide error variable on every job "
                    "(upstream issue 112): the ipsec app's batched path will not scale past a few cores; "
                    "scripts/fetch-ipsec-mb.sh gets 2.0")
  endif()
else()
  message(STATUS "intel-ipsec-mb not found (scripts/fetch-ipsec-mb.sh): the ipsec app's batched path uses OpenSSL")
endif()

# cpp-httplib (optional): the HTTP server behind `tandem run --metrics` (Prometheus text format),
# Debian's libcpp-httplib-dev (a header and a shared library). Without it --metrics says so.
find_path(HTTPLIB_INCLUDE_DIR httplib.h)
find_library(HTTPLIB_LIBRARY NAMES cpp-httplib)
set(TANDEM_HAVE_HTTPLIB OFF)
if(HTTPLIB_INCLUDE_DIR AND HTTPLIB_LIBRARY)
  set(TANDEM_HAVE_HTTPLIB ON)
  add_library(tandem_httplib INTERFACE)
  target_include_directories(tandem_httplib SYSTEM INTERFACE "${HTTPLIB_INCLUDE_DIR}")
  target_link_libraries(tandem_httplib INTERFACE "${HTTPLIB_LIBRARY}")
  target_compile_definitions(tandem_httplib INTERFACE CPPHTTPLIB_OPENSSL_SUPPORT CPPHTTPLIB_ZLIB_SUPPORT
                             CPPHTTPLIB_BROTLI_SUPPORT TANDEM_HAVE_HTTPLIB=1)
endif()

# libxdp and libbpf (optional): the AF_XDP backend of live ports (io/af_xdp.h), Debian's
# libxdp-dev and libbpf-dev. Without them `--rx af_xdp:IF` says so.
find_path(XDP_INCLUDE_DIR xdp/xsk.h)
find_library(XDP_LIBRARY NAMES xdp)
find_library(BPF_LIBRARY NAMES bpf)
set(TANDEM_HAVE_XDP OFF)
if(XDP_INCLUDE_DIR AND XDP_LIBRARY AND BPF_LIBRARY)
  set(TANDEM_HAVE_XDP ON)
  add_library(tandem_xdp INTERFACE)
  target_include_directories(tandem_xdp SYSTEM INTERFACE "${XDP_INCLUDE_DIR}")
  target_link_libraries(tandem_xdp INTERFACE "${XDP_LIBRARY}" "${BPF_LIBRARY}")
endif()
