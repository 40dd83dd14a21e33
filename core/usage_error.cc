#include "core/usage_error.h"

#include <cstdio>

namespace tandem {

void warn(const std::string& text) {
  if (!text.empty()) std::fprintf(stderr, "warning: %s\n", text.c_str());
}

}  // namespace tandem
