// How host code gets an app's GPU part without naming its CUDA code: the part's interface (a
// host-only header) creates it through a GpuFactory, and the part's .cu file registers the
// implementation at static initialisation. A build without CUDA compiles no .cu file, so nothing
// registers and create() throws the GpuError a missing GPU gives: no stub per app is needed.
//
//   // foo_gpu.h
//   class FooGpuTable {
//    public:
//     using Factory = gpu::GpuFactory<std::unique_ptr<FooGpuTable>(const FooTable&)>;
//     static std::unique_ptr<FooGpuTable> create(const FooTable& t) { return Factory::create(t); }
//     virtual ... = 0;
//   };
//   // foo_gpu.cu
//   class FooGpuTableImpl final : public FooGpuTable { ... };
//   const FooGpuTable::Factory::Registrar registered{&FooGpuTable::Factory::make<FooGpuTableImpl>};
//
// The registering object must be linked in although nothing names it: the build links every app
// and every library's GPU part whole (cmake/TandemApp.cmake).
#pragma once

#include <memory>
#include <utility>

#include "gpu/gpu_runtime.h"

namespace tandem::gpu {

// The factory of one signature, `Result(Args...)`. `Tag` tells apart two factories of the same
// signature (two kinds of runner made from the same options, say).
template <class Signature, class Tag = void>
class GpuFactory;

template <class Result, class... Args, class Tag>
class GpuFactory<Result(Args...), Tag> {
 public:
  using Fn = Result (*)(Args...);

  // Throws GpuError when this build has no implementation (no CUDA), else whatever it throws.
  static Result create(Args... args) {
    if (!fn_) throw GpuError("no GPU: this build of Tandem has no CUDA support");
    return fn_(std::forward<Args>(args)...);
  }

  // Whether an implementation registered: in every build with CUDA, none without.
  static bool registered() { return fn_ != nullptr; }

  // `Impl` constructed from the arguments, for a Result that is a unique_ptr to its base.
  template <class Impl>
  static Result make(Args... args) {
    return std::make_unique<Impl>(std::forward<Args>(args)...);
  }

  // A static object of the .cu file that provides the implementation.
  struct Registrar {
    explicit Registrar(Fn f) { fn_ = f; }
  };

 private:
  static inline Fn fn_ = nullptr;  // constant-initialised: set before any registrar runs
};

}  // namespace tandem::gpu
