// `tandem run --gpu-path resident`: the resident path's flags, its description and its report
// lines (sched/resident.h), kept out of cmd_run.cc, which runs either path.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "sched/resident.h"

namespace tandem::cli {

struct ResidentFlags {
  std::string layout = "cells";
  uint32_t ring_slots = 16;  // per receive thread
  std::string zero_copy = "on";
};

// Adds --frame-layout, --ring-slots and --zero-copy to `run`.
void add_resident_flags(CLI::App* run, ResidentFlags& f);

// The ring's options from the run's GPU flags: mode "persistent" or "async" (DMA), frames per slot.
gpu::ResidentOptions resident_options(const ResidentFlags& f, const std::string& gpu_mode, uint32_t batch,
                                      int blocks, uint64_t fault_at, uint32_t cell_size);

// The path in words, for the "device:" line.
std::string describe_resident(const ResidentConfig& rc, const std::string& gpu_side);

// What the run's figures add: the receive threads' time apart from finishing, batches on the
// GPU and the CPU, a GPU failure.
void print_resident(const ResidentResult& r, double seconds);
nlohmann::json resident_json(const ResidentResult& r, const ResidentConfig& rc);

// Adds one run's resident figures to `into` (a capture forwarded a window at a time).
void add_resident(ResidentResult& into, const ResidentResult& r);

}  // namespace tandem::cli
