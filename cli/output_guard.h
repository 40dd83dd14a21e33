// Every command's outputs are checked against its inputs before the command runs
// (io/output_file.h's check_outputs): an output that is one of the inputs, or another output, is
// refused before anything is read or written. The outputs are the options named --out and --json;
// the inputs are all other options, of the command and of the commands above it, whose values name
// existing files. Taking the inputs by what their values name rather than from a list of flags
// keeps every input flag covered, those of commands added later too.
#pragma once

#include <CLI/CLI.hpp>

namespace tandem::cli {

// Installs the check on `app` (the top-level app): it runs once parsing is complete, before any
// subcommand's callback.
void guard_outputs(CLI::App& app);

}  // namespace tandem::cli
