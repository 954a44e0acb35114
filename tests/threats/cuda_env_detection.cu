// threat: detects the harness from the environment
// layer: static
// expect: forbidden
#include <cstdlib>
#include "kforge_runtime.cuh"
extern "C" int k0(KfContext* ctx, void* const* bufs) { return getenv("KFORGE_PROFILE") != nullptr; }
