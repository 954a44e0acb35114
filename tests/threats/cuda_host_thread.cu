// threat: starts a host thread from the kernel entry
// layer: static
// expect: forbidden
#include <thread>
#include "kforge_runtime.cuh"
extern "C" int k0(KfContext* ctx, void* const* bufs) {
  std::thread([] {}).detach();
  return 0;
}
