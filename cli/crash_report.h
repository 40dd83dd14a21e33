// A fatal signal (a segmentation fault, a bus error) reported where it happened: the signal, the
// faulting address and the stack, on standard error, before the process dies of it as it would
// have (same signal, core dump where enabled). A run that ends this way under a supervisor, a
// benchmark's child process or a CI job leaves the trace in its log.
#pragma once

namespace tandem::cli {

// Once, early in main. Builds with AddressSanitizer keep its own, richer report.
void install_crash_report();

}  // namespace tandem::cli
