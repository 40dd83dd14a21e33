// PacketShader's "huge packet buffer": every packet lives in a fixed-size cell of one large,
// pre-allocated, hugepage-backed region. Cells are named by 32-bit indices, so batches carry
// indices instead of pointers and nothing on the hot path calls malloc.
#pragma once

#include <cstdint>
#include <cstddef>
#include <vector>

#include "core/compiler.h"
#include "core/huge_memory.h"

namespace tandem {

class PacketPool {
 public:
  static constexpr uint32_t kDefaultCellSize = 2048;  // fits a 1518-byte frame plus headroom
  static constexpr uint32_t kHeadroom = 128;          // room to push encapsulation headers later
  static constexpr uint32_t kInvalidCell = 0xFFFFFFFFu;

  // Allocates `num_cells` cells of `cell_size` bytes (a multiple of 64) in one mapping.
  // Throws std::runtime_error if the memory cannot be mapped.
  explicit PacketPool(uint32_t num_cells, uint32_t cell_size = kDefaultCellSize);
  // A view of cells that live elsewhere (a resident ring's slots, whose frames a CPU device
  // processes where the receive side wrote them): cell i starts at base + i x cell_size. It owns
  // no memory and hands out no cells (alloc_bulk returns 0).
  struct View {};
  PacketPool(View, uint8_t* base, uint32_t num_cells, uint32_t cell_size);
  // Cells that a port's driver hands out and takes back (DPDK mbufs: io/dpdk_port.h), so that a
  // worker processes frames where they arrived. The pool hands out no cells itself; freeing one
  // gives it back to its owner.
  class Owner {
   public:
    virtual ~Owner() = default;
    virtual void release(const uint32_t* cells, uint32_t n) = 0;
  };
  // A view whose cells belong to `owner`: cell i starts at base + i x cell_size, its frame
  // kHeadroom bytes in, with room for `max_frame` bytes (less than the stride: the owner keeps
  // its own bookkeeping between cells).
  PacketPool(View, uint8_t* base, uint32_t num_cells, uint32_t cell_size, uint32_t max_frame, Owner* owner);
  PacketPool(const PacketPool&) = delete;
  PacketPool& operator=(const PacketPool&) = delete;

  uint32_t num_cells() const { return num_cells_; }
  uint32_t cell_size() const { return cell_size_; }
  // Largest frame a cell holds after the headroom.
  uint32_t max_frame() const { return max_frame_; }
  // Cells alloc_bulk can hand out now. An owned view has none to hand out, and never runs dry
  // either: its owner's driver receives into them (and counts its own shortage).
  uint32_t available() const { return owner_ ? UINT32_MAX : static_cast<uint32_t>(free_top_); }
  Owner* owner() const { return owner_; }

  // The memory every cell's frame lies in: from the first cell's start to the end of the last
  // cell's frame room (what a GPU registers to work on frames where they are).
  uint8_t* region() const { return base_; }
  size_t region_bytes() const {
    return num_cells_ ? size_t{num_cells_ - 1} * cell_size_ + kHeadroom + max_frame_ : 0;
  }

  // Start of the frame stored in cell `idx` (after the headroom).
  uint8_t* data(uint32_t idx) { return base_ + static_cast<size_t>(idx) * cell_size_ + kHeadroom; }
  const uint8_t* data(uint32_t idx) const {
    return base_ + static_cast<size_t>(idx) * cell_size_ + kHeadroom;
  }

  // Takes up to `n` free cells into `out`; returns how many it took (fewer when the pool runs dry,
  // which callers count as back-pressure, never as silent loss).
  uint32_t alloc_bulk(uint32_t* out, uint32_t n);
  // Returns cells to the pool. Freeing a cell twice is a caller bug (checked in debug builds).
  void free_bulk(const uint32_t* cells, uint32_t n);

 private:
  HugeRegion region_;
  uint8_t* base_ = nullptr;
  uint32_t num_cells_ = 0;
  uint32_t cell_size_ = 0;
  uint32_t max_frame_ = 0;
  Owner* owner_ = nullptr;
  std::vector<uint32_t> free_;  // LIFO stack: recently freed cells are still warm in cache
  size_t free_top_ = 0;
};

}  // namespace tandem
