#pragma once

#include <stdexcept>
#include <string>

namespace tandem {

// An I/O or input-format error. The message names the file and, where it applies, the packet
// number (1-based) or line, so users can find the problem.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tandem
