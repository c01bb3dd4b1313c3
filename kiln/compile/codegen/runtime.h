#pragma once
// The interface between Kiln and the kernels kiln::compile generates: plain C types, so that a
// generated shared object needs nothing of Kiln but the headers it is compiled with.
#include <stdint.h>

extern "C" {

typedef void (*KilnRangeFn)(void* ctx, int64_t begin, int64_t end);

struct KilnKernelRuntime {
  // Runs fn over [begin, end) on Kiln's threads, in chunks of at least `grain`.
  void (*parallel_for)(int64_t begin, int64_t end, int64_t grain, KilnRangeFn fn, void* ctx);
};

// A kernel: its buffers (loads, then stores, as cpp_codegen.h lists them) and the values of
// its size parameters.
typedef void (*KilnKernelFn)(char* const* buffers, const int64_t* params,
                             const struct KilnKernelRuntime* runtime);
}
