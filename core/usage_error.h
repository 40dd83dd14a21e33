// The error for what a user got wrong (a missing or conflicting flag, a table that does not load):
// commands print it as "tandem: error: <msg>" and exit with code 1. Apps throw it from their
// loaders, which run before any packet moves.
#pragma once

#include <stdexcept>
#include <string>

namespace tandem {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Prints "warning: TEXT" on standard error unless `text` is empty.
void warn(const std::string& text);

}  // namespace tandem
