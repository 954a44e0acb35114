// threat: reads a file (the reference) from the kernel entry
// layer: static
// expect: forbidden
#include <cstdio>
#include "kforge_runtime.cuh"
extern "C" int k0(KfContext* ctx, void* const* bufs) {
  FILE* f = fopen("/tmp/reference_outputs.bin", "rb");
  return f != nullptr;
}
