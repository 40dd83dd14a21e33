// A scheduler controller for tests (sched/controller.h) under which shards are always on the move.
#pragma once

#include <string>

#include "sched/controller.h"

namespace tandem {

// Moves shares around every tick: all to one device, then spread, then to another.
class ChaosController final : public sched::Controller {
 public:
  sched::Decision decide(const sched::Observation& o) override {
    sched::Decision d;
    d.change = true;
    d.share.assign(o.dev.size(), 0.0);
    const size_t k = tick_++ % (o.dev.size() + 1);
    if (k == o.dev.size()) {
      d.share.assign(o.dev.size(), 1.0 / o.dev.size());
    } else {
      d.share[k] = 1;
    }
    d.reason = "chaos " + std::to_string(k);
    return d;
  }
  std::string name() const override { return "chaos"; }

 private:
  size_t tick_ = 0;
};

}  // namespace tandem
