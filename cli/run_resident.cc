#include "cli/run_resident.h"

#include <cstdio>

#include "cli/commands.h"
#include "gpu/offload.h"

namespace tandem::cli {

void add_resident_flags(CLI::App* run, ResidentFlags& f) {
  run->add_option("--frame-layout", f.layout,
                  "GPU resident path: where the receive side puts frames: cells (one per 2 KiB cell, as a "
                  "packet pool) or packed (back to back, as multi-packet receive queues)")
      ->capture_default_str()->check(CLI::IsMember({"cells", "packed"}));
  run->add_option("--ring-slots", f.ring_slots,
                  "GPU resident path: batches in flight per receive thread (ipsec: 32 unless given; DPDK ports with "
                  "--zero-copy on: 64 unless given)")
      ->capture_default_str()->check(CLI::Range(2u, 1024u));
  run->add_option("--zero-copy", f.zero_copy,
                  "GPU resident path on DPDK ports: on, the GPU works on the frames in the mbufs they arrived in "
                  "(registered with CUDA) and those mbufs are sent; off, frames are copied into the ring and out "
                  "(on needs --gpu-mode persistent and --frame-layout cells, else frames are copied)")
      ->capture_default_str()->check(CLI::IsMember({"on", "off"}));
}

gpu::ResidentOptions resident_options(const ResidentFlags& f, const std::string& gpu_mode, uint32_t batch,
                                      int blocks, uint64_t fault_at, uint32_t cell_size) {
  gpu::ResidentOptions o;
  if (gpu_mode == "persistent") {
    o.mode = gpu::GpuMode::kPersistent;
  } else if (gpu_mode == "async") {
    o.mode = gpu::GpuMode::kAsync;
  } else {
    throw UsageError("--gpu-path resident: --gpu-mode " + gpu_mode +
                     " is not offered: persistent (a resident kernel on the frames where they lie) or async "
                     "(each batch copied to the GPU and back)");
  }
  o.layout = gpu::parse_frame_layout(f.layout);
  if (o.mode == gpu::GpuMode::kPersistent && batch > 2048) {
    throw UsageError("--gpu-path resident --gpu-mode persistent: --batch is at most 2048 frames");
  }
  o.batch = batch;
  o.cell_size = cell_size;
  o.slots_per_producer = f.ring_slots;
  o.blocks = blocks;
  o.fault_at_batch = fault_at;
  return o;
}

std::string describe_resident(const ResidentConfig& rc, const std::string& gpu_side) {
  const gpu::ResidentOptions& o = rc.ring;
  return "resident path: " + gpu_side + "; frames " +
         (o.layout == gpu::FrameLayout::kCells ? "in " + std::to_string(o.cell_size) + "-byte cells" : std::string("packed")) +
         ", batches of up to " + std::to_string(o.batch) + " frames, " + std::to_string(o.slots_per_producer) +
         " in flight per receive thread; " + std::to_string(rc.producers) + " receive thread" +
         (rc.producers > 1 ? "s" : "") + " (the NIC's stand-in: copy frames in, publish batches, finish them)";
}

void print_resident(const ResidentResult& r, double seconds) {
  std::printf("resident: %llu batches (%llu on the CPU); receive threads busy %.3f core-s receiving (the NIC's "
              "copy), %.3f core-s finishing batches, of %.3f s wall clock%s\n",
              static_cast<unsigned long long>(r.batches), static_cast<unsigned long long>(r.cpu_batches), r.rx_seconds,
              r.finish_seconds, seconds, r.gpu_failed ? "; finished on the CPU after a GPU failure" : "");
  if (r.gpu_failed) std::printf("gpu error: %s\n", r.gpu_error.c_str());
  if (r.gpus.size() > 1) {
    uint64_t all = 0;
    for (const ResidentGpuReport& g : r.gpus) all += g.packets;
    for (const ResidentGpuReport& g : r.gpus) {
      std::printf("gpu %d: %.1f%% of packets (%.2f Mpps) from %u receive thread%s, %llu batches on the GPU%s%s\n", g.gpu,
                  all ? 100.0 * g.packets / all : 0.0, seconds > 0 ? g.packets / seconds / 1e6 : 0.0, g.receive_threads,
                  g.receive_threads > 1 ? "s" : "", static_cast<unsigned long long>(g.batches),
                  g.numa_node >= 0 ? (", NUMA node " + std::to_string(g.numa_node)).c_str() : "",
                  g.failed ? ", FAILED (its threads finished on the CPU)" : "");
    }
  }
}

nlohmann::json resident_json(const ResidentResult& r, const ResidentConfig& rc) {
  return {{"mode", gpu::gpu_mode_name(rc.ring.mode)},
          {"layout", gpu::frame_layout_name(rc.ring.layout)},
          {"batch", rc.ring.batch},
          {"slots_per_thread", rc.ring.slots_per_producer},
          {"receive_threads", rc.producers},
          {"batches", r.batches},
          {"cpu_batches", r.cpu_batches},
          {"rx_core_seconds", r.rx_seconds},
          {"finish_core_seconds", r.finish_seconds},
          {"cpu_process_seconds", r.cpu_seconds},
          {"gpu_failed", r.gpu_failed},
          {"gpu_error", r.gpu_error},
          {"gpu_side", r.describe},
          {"zero_copy", r.zero_copy},
          {"gpus", [&] {
             nlohmann::json a = nlohmann::json::array();
             for (const ResidentGpuReport& g : r.gpus) {
               a.push_back({{"gpu", g.gpu}, {"numa_node", g.numa_node}, {"receive_threads", g.receive_threads},
                            {"packets", g.packets}, {"batches", g.batches}, {"failed", g.failed}});
             }
             return a;
           }()}};
}

void add_resident(ResidentResult& into, const ResidentResult& r) {
  into.rx_seconds += r.rx_seconds;
  into.finish_seconds += r.finish_seconds;
  into.cpu_seconds += r.cpu_seconds;
  into.batches += r.batches;
  into.cpu_batches += r.cpu_batches;
  if (into.gpus.size() != r.gpus.size()) {
    into.gpus = r.gpus;
  } else {
    for (size_t g = 0; g < r.gpus.size(); ++g) {
      into.gpus[g].packets += r.gpus[g].packets;
      into.gpus[g].batches += r.gpus[g].batches;
      into.gpus[g].failed = into.gpus[g].failed || r.gpus[g].failed;
    }
  }
  if (r.gpu_failed && !into.gpu_failed) {
    into.gpu_failed = true;
    into.gpu_error = r.gpu_error;
  }
  into.describe = r.describe;
}

}  // namespace tandem::cli
