/* DPDK's rte_string_fns.h includes <bsd/string.h> when DPDK was built with libbsd (Debian's was,
 * RTE_USE_LIBBSD), for strlcpy and strlcat. glibc has them from 2.38; before that they come from
 * libbsd at link time (cmake/TandemDeps.cmake links it). This stand-in only declares them, so the
 * DPDK comparators build without libbsd's headers installed. */
#pragma once
#include <stddef.h>
#include <string.h>
#if defined(__GLIBC__) && (__GLIBC__ < 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ < 38))
#ifdef __cplusplus
extern "C" {
#endif
size_t strlcpy(char* dst, const char* src, size_t size);
size_t strlcat(char* dst, const char* src, size_t size);
#ifdef __cplusplus
}
#endif
#endif
