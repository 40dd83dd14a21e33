/* gopt.h - annotations for the G-Opt source-to-source transformer (tools/gopt/gopt.py).
 *
 * A batch function is written as
 *     void f(...) { G_FOREACH(i, n) { ...; G_EXPENSIVE(addr); ...; } }
 * Compiled normally, G_FOREACH is a plain loop over the batch and G_EXPENSIVE does nothing,
 * which gives the naive (reference) version. gopt.py preprocesses the input with
 * -DGOPT_TRANSFORMING, where the macros expand to markers it recognises in the syntax tree.
 * The transformed output does not need this header (it uses only GCC/Clang builtins and
 * computed goto), but it keeps the input's #include lines, so the header must still be found. */
#ifndef GOPT_H
#define GOPT_H

#ifdef GOPT_TRANSFORMING
typedef int __gopt_index_t;
void __gopt_expensive(const volatile void *addr);
void __gopt_prefetch(const volatile void *addr);
#define G_FOREACH(i, n) for (__gopt_index_t i = 0; i < (n); i++)
#define G_EXPENSIVE(addr) __gopt_expensive(addr)
#define G_PREFETCH(addr) __gopt_prefetch(addr)
#else
/* The batch loop; `i` is an int, the count is converted to int. */
#define G_FOREACH(i, n) for (int i = 0; i < (int)(n); i++)
/* Marks the next statement(s) as doing an expensive (likely DRAM) access to `addr`.
 * Not evaluated in the naive version, so `addr` must be free of side effects. */
#define G_EXPENSIVE(addr) ((void)0)
/* Extension: a prefetch without a switch (e.g. the second cache line of a bucket, issued just
 * before the G_EXPENSIVE of the first one). Also a no-op in the naive version. */
#define G_PREFETCH(addr) ((void)0)
#endif

/* Default bound on the number of lookups interleaved at once by transformed code; a longer
 * batch is processed in chunks of this size. gopt.py --max-batch changes the default it writes. */
#ifndef GOPT_MAX_BATCH
#define GOPT_MAX_BATCH 64
#endif

#endif /* GOPT_H */
