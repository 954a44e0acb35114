// threat: uses torch from the generated code
// layer: static
// expect: forbidden
#include <torch/extension.h>
#include "kforge_runtime.cuh"
extern "C" int k0(KfContext* ctx, void* const* bufs) { return 0; }
