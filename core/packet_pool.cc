#include "core/packet_pool.h"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace tandem {

PacketPool::PacketPool(uint32_t num_cells, uint32_t cell_size)
    : num_cells_(num_cells), cell_size_(cell_size), max_frame_(cell_size - kHeadroom) {
  if (num_cells == 0 || cell_size < kHeadroom + 64 || cell_size % kCacheLine != 0) {
    throw std::invalid_argument("PacketPool: cell size must be a multiple of 64 and > headroom");
  }
  region_ = HugeRegion(static_cast<size_t>(num_cells) * cell_size);
  base_ = static_cast<uint8_t*>(region_.data());
  free_.resize(num_cells);
  // Hand out low indices first so small runs touch few pages.
  for (uint32_t i = 0; i < num_cells; ++i) free_[i] = num_cells - 1 - i;
  free_top_ = num_cells;
}

PacketPool::PacketPool(View, uint8_t* base, uint32_t num_cells, uint32_t cell_size)
    : base_(base), num_cells_(num_cells), cell_size_(cell_size), max_frame_(cell_size - kHeadroom) {
  if (base == nullptr || cell_size < kHeadroom + 64 || cell_size % kCacheLine != 0) {
    throw std::invalid_argument("PacketPool view: cell size must be a multiple of 64 and > headroom");
  }
}

PacketPool::PacketPool(View, uint8_t* base, uint32_t num_cells, uint32_t cell_size, uint32_t max_frame, Owner* owner)
    : base_(base), num_cells_(num_cells), cell_size_(cell_size), max_frame_(max_frame), owner_(owner) {
  if (base == nullptr || owner == nullptr || max_frame < 64 || max_frame > cell_size - kHeadroom) {
    throw std::invalid_argument("PacketPool owned view: needs a base, an owner and 64..cell_size - headroom bytes a frame");
  }
}

uint32_t PacketPool::alloc_bulk(uint32_t* out, uint32_t n) {
  const uint32_t take = n < free_top_ ? n : static_cast<uint32_t>(free_top_);
  for (uint32_t i = 0; i < take; ++i) out[i] = free_[--free_top_];
  return take;
}

void PacketPool::free_bulk(const uint32_t* cells, uint32_t n) {
  if (owner_) return owner_->release(cells, n);
  if (free_.empty()) return;  // a view: its cells belong to someone else
  // More frees than cells means a cell was freed twice: stop before writing past the stack.
  if (TANDEM_UNLIKELY(free_top_ + n > num_cells_)) {
    std::fprintf(stderr, "PacketPool::free_bulk: more cells freed than allocated (double free)\n");
    std::abort();
  }
  for (uint32_t i = 0; i < n; ++i) {
    assert(cells[i] < num_cells_);
    free_[free_top_++] = cells[i];
  }
}

}  // namespace tandem
