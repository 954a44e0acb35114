// Where every value lives at run time: an input, parameter or output pointer, a slice of the
// scratch buffer, or an alias of another value's storage.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "schedule/schedule.h"

namespace kforge::codegen {

// kRegister: made and consumed inside one fused kernel, never stored.
enum class Storage { kInput, kParam, kOutput, kScratch, kAlias, kRegister };

struct BufferSlot {
  Storage storage = Storage::kScratch;
  int index = 0;      // input/param/output position, or the aliased value
  size_t offset = 0;  // scratch offset in bytes (kScratch)
};

struct BufferPlan {
  std::vector<BufferSlot> slots;  // one per graph value, indexed like Graph::values()
  size_t scratch_bytes = 0;       // intermediates
  size_t workspace_offset = 0;    // library workspace starts here in the scratch buffer
  size_t workspace_bytes = 0;
  size_t total_bytes() const { return workspace_offset + workspace_bytes; }
};

// Assigns storage: graph inputs/params/outputs use the caller's pointers, intermediates get
// 256-byte aligned scratch, alias kernels share their input's storage.
BufferPlan plan_buffers(const ir::Graph& g, const schedule::Schedule& s);

}  // namespace kforge::codegen
