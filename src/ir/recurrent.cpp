// The `rnn` op's geometry and shape rule (recurrent.h).
#include "ir/recurrent.h"

#include "ir/infer_args.h"
#include "ir/op_registry.h"

namespace kforge::ir {

std::string_view rnn_mode_name(RnnMode m) {
  switch (m) {
    case RnnMode::kRnnTanh: return "rnn_tanh";
    case RnnMode::kRnnRelu: return "rnn_relu";
    case RnnMode::kLstm: return "lstm";
    case RnnMode::kGru: return "gru";
  }
  return "lstm";
}

StatusOr<RnnMode> rnn_mode_named(std::string_view name) {
  for (RnnMode m : {RnnMode::kRnnTanh, RnnMode::kRnnRelu, RnnMode::kLstm, RnnMode::kGru}) {
    if (rnn_mode_name(m) == name) return m;
  }
  return invalid_argument("unknown rnn mode '" + std::string(name) + "' (rnn_tanh, rnn_relu, lstm or gru)");
}

Shape RnnGeometry::output_shape() const {
  const int64_t width = directions * hidden_size;
  return batch_first ? Shape{batch, seq, width} : Shape{seq, batch, width};
}

Shape RnnGeometry::state_shape() const {
  return {layers * directions, batch, hidden_size};
}

int64_t RnnGeometry::output_numel() const {
  return seq * batch * directions * hidden_size;
}

int64_t RnnGeometry::state_numel() const {
  return layers * directions * batch * hidden_size;
}

Shape RnnGeometry::weight_shape(int64_t i) const {
  const int64_t per = weights_per_direction();
  const int64_t layer = i / (per * directions);
  const int64_t rows = gates * hidden_size;
  switch (i % per) {
    case 0: return {rows, layer_input(layer)};  // w_ih
    case 1: return {rows, hidden_size};         // w_hh
    default: return {rows};                     // b_ih, b_hh
  }
}

double RnnGeometry::gemm_flops() const {
  double per_step = 0;
  for (int64_t l = 0; l < layers; ++l) {
    per_step += 2.0 * static_cast<double>(directions * gates * hidden_size) *
                static_cast<double>(layer_input(l) + hidden_size) * static_cast<double>(batch);
  }
  return per_step * static_cast<double>(seq);
}

StatusOr<RnnGeometry> rnn_geometry(const Graph& g, const Node& node) {
  if (op_info(node.op).family != OpFamily::kRecurrent) return invalid_argument("not a recurrent op");
  RnnGeometry r;
  KF_ASSIGN_OR_RETURN(r.mode, rnn_mode_named(node.attrs.s("mode")));
  r.gates = r.mode == RnnMode::kLstm ? 4 : r.mode == RnnMode::kGru ? 3 : 1;
  r.input_size = node.attrs.i("input_size");
  r.hidden_size = node.attrs.i("hidden_size");
  r.layers = node.attrs.i("num_layers");
  r.directions = node.attrs.b("bidirectional") ? 2 : 1;
  r.batch_first = node.attrs.b("batch_first");
  r.has_biases = node.attrs.b("has_biases");
  if (r.input_size <= 0 || r.hidden_size <= 0 || r.layers <= 0)
    return invalid_argument("input_size, hidden_size and num_layers must be positive");
  if (node.inputs.empty() || node.inputs[0] == kNoValue) return invalid_argument("needs an input x");
  const TensorType& x = g.type(node.inputs[0]);
  if (x.dtype != DType::kFloat32)
    return invalid_argument("takes float32 only, x is " + std::string(dtype_name(x.dtype)));
  if (x.shape.size() != 3)
    return invalid_argument("needs a 3-D input (T, B, input_size) or (B, T, input_size), got " + shape_str(x.shape));
  if (x.shape[2] != r.input_size)
    return invalid_argument("input " + shape_str(x.shape) + " does not end in input_size " +
                            std::to_string(r.input_size));
  r.seq = r.batch_first ? x.shape[1] : x.shape[0];
  r.batch = r.batch_first ? x.shape[0] : x.shape[1];
  if (r.seq <= 0 || r.batch <= 0) return invalid_argument("needs a non-empty sequence and batch");
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (i >= node.inputs.size() || node.inputs[i] == kNoValue) continue;
    if (i == 2 && !r.has_cell()) return invalid_argument("c0 is an lstm's only");
    const TensorType& h = g.type(node.inputs[i]);
    if (h.shape != r.state_shape() || h.dtype != DType::kFloat32)
      return invalid_argument(std::string(i == 1 ? "h0" : "c0") + " must be float32 " + shape_str(r.state_shape()) +
                              ", got " + std::string(dtype_name(h.dtype)) + " " + shape_str(h.shape));
  }
  const int64_t weights = static_cast<int64_t>(node.inputs.size()) - static_cast<int64_t>(kRnnFirstWeight);
  if (weights != r.weight_count())
    return invalid_argument("needs " + std::to_string(r.weight_count()) + " weights (torch's _flat_weights), got " +
                            std::to_string(std::max<int64_t>(weights, 0)));
  for (int64_t i = 0; i < weights; ++i) {
    const ValueIndex v = node.inputs[kRnnFirstWeight + static_cast<size_t>(i)];
    if (v == kNoValue) return invalid_argument("weight " + std::to_string(i) + " is missing");
    const TensorType& w = g.type(v);
    if (w.shape != r.weight_shape(i) || w.dtype != DType::kFloat32)
      return invalid_argument("weight " + std::to_string(i) + " must be float32 " + shape_str(r.weight_shape(i)) +
                              ", got " + std::string(dtype_name(w.dtype)) + " " + shape_str(w.shape));
  }
  return r;
}

StatusOr<TensorType> infer_Recurrent(const InferArgs& x) {
  KF_ASSIGN_OR_RETURN(RnnGeometry r, rnn_geometry(x.g, x.node));
  return TensorType{{r.packed_numel()}, DType::kFloat32};
}

}  // namespace kforge::ir
