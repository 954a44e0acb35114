// The first cost model: a roofline per kernel (FLOPs and minimum bytes against H200 ceilings)
// plus launch overhead. Its times are predictions and are always labelled so.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "schedule/schedule.h"

namespace kforge::costmodel {

// Measured on the H200 (shared/DEVICE.md): cuBLAS fp32, TF32 tensor cores, device copy bandwidth.
struct DeviceCeilings {
  std::string name = "NVIDIA H200 (roofline)";
  double fp32_flops = 51e12;
  double tf32_flops = 400e12;
  double bytes_per_second = 4.2e12;  // read + write, device-to-device copy
  double launch_seconds = 2.5e-6;    // per kernel launch or library call, back to back
};

struct KernelCost {
  std::string kernel;
  double flops = 0;
  double bytes = 0;    // compulsory traffic: every input read once, the output written once
  double seconds = 0;  // max(compute, memory) + launch
  std::string bound;   // "compute", "memory", "launch" or "latency" (a recurrent layer's serial steps)
};

struct ProgramCost {
  std::vector<KernelCost> kernels;
  double seconds = 0;        // sum over kernels: the predicted time of the whole forward
  double floor_seconds = 0;  // the graph's own floor: graph inputs/params read once, outputs written once
};

KernelCost kernel_cost(const ir::Graph& g, const schedule::Schedule& s, const schedule::Kernel& k,
                       const DeviceCeilings& d = {});
ProgramCost program_cost(const ir::Graph& g, const schedule::Schedule& s, const DeviceCeilings& d = {});

// FLOPs of one node (multiply-add = 2).
double node_flops(const ir::Graph& g, const ir::Node& n);

}  // namespace kforge::costmodel
