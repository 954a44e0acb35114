// TensorState helpers: sizes as Python text.
#include "synth/tensor_state.h"

namespace kforge::synth {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kFlat: return "flat";
    case Layout::kFeatures: return "features";
    case Layout::kSequence: return "sequence";
    case Layout::kChannels: return "channels";
    case Layout::kHeads: return "heads";
    case Layout::kGeneric: return "generic";
  }
  return "?";
}

int64_t TensorState::sample_numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string TensorState::size_expr(int d) const {
  const size_t i = static_cast<size_t>(d - 1);
  if (i < names.size() && !names[i].empty()) return names[i];
  return std::to_string(dims[i]);
}

std::string TensorState::shape_args(const std::string& batch) const {
  std::string s = batch;
  for (int d = 1; d < rank(); ++d) s += ", " + size_expr(d);
  return s;
}

TensorState unnamed(std::vector<int64_t> dims, Layout layout, Domain domain) {
  TensorState t;
  t.names.assign(dims.size(), "");
  t.dims = std::move(dims);
  t.layout = layout;
  t.domain = domain;
  return t;
}

}  // namespace kforge::synth
