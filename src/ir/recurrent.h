// The recurrent op `rnn` (nn.LSTM / nn.GRU / nn.RNN kept whole): its geometry, read from a node, and the
// layout of its one packed output (output, h_n, c_n one after another; docs/graph-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace kforge::ir {

enum class RnnMode { kRnnTanh, kRnnRelu, kLstm, kGru };

// The attr value ("rnn_tanh", "rnn_relu", "lstm", "gru") of a mode, and back.
std::string_view rnn_mode_name(RnnMode m);
StatusOr<RnnMode> rnn_mode_named(std::string_view name);

struct RnnGeometry {
  RnnMode mode = RnnMode::kLstm;
  int64_t gates = 4;  // G: rows of w_ih per hidden unit (lstm 4, gru 3, rnn 1)
  int64_t seq = 0;    // T
  int64_t batch = 0;  // B
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t layers = 1;      // L
  int64_t directions = 1;  // D
  bool batch_first = false;
  bool has_biases = true;

  bool has_cell() const { return mode == RnnMode::kLstm; }
  int64_t weights_per_direction() const { return has_biases ? 4 : 2; }
  int64_t weight_count() const { return layers * directions * weights_per_direction(); }
  // The input width of layer l: input_size, then D * H.
  int64_t layer_input(int64_t l) const { return l == 0 ? input_size : directions * hidden_size; }
  // Shapes of the three results and of the states.
  Shape output_shape() const;  // (T, B, D * H), batch_first (B, T, D * H)
  Shape state_shape() const;   // (L * D, B, H)
  int64_t output_numel() const;
  int64_t state_numel() const;
  // The packed output: output, h_n, then c_n (lstm).
  int64_t packed_numel() const { return output_numel() + state_numel() * (has_cell() ? 2 : 1); }
  // The expected shape of the i-th weight operand (0-based, torch's _flat_weights order).
  Shape weight_shape(int64_t i) const;
  // Multiply-adds of one forward (the input and recurrent GEMMs of every step, layer and direction).
  double gemm_flops() const;
};

// The geometry of an `rnn` node, checked against its operands: the attrs, x, h0, c0 and every weight's
// shape and dtype (float32 only). The operand indices: 0 x, 1 h0, 2 c0, 3... weights.
StatusOr<RnnGeometry> rnn_geometry(const Graph& g, const Node& node);

constexpr size_t kRnnFirstWeight = 3;

}  // namespace kforge::ir
