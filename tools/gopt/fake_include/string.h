/* Minimal stand-in used only while gopt.py parses its input. */
#ifndef GOPT_FAKE_STRING_H
#define GOPT_FAKE_STRING_H
#include <stddef.h>
void *memcpy(void *d, const void *s, size_t n);
void *memset(void *d, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
#endif
