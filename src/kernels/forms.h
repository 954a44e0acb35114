// The kernel catalogue's forms (forms.def): which multi-node kernels code generation implements, recognised
// from the graph and the kernel. The fusing skills (skills/) form them and check legality with these
// predicates; codegen (emit.cpp) dispatches on kernel_form. Neither includes the other for it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/strided_view.h"
#include "schedule/schedule.h"

namespace kforge::kernels {

enum class KernelForm : unsigned char {
#define KF_FORM(id, name, what) k##id,
#include "kernels/forms.def"
#undef KF_FORM
};

std::string_view form_name(KernelForm f);

// The form of kernel k, checking forms.def's entries in order; kOneOp for one node of any strategy but
// elementwise and constant_fill, kUnknown for several nodes of no form.
KernelForm kernel_form(const ir::Graph& g, const schedule::Kernel& k);

// ---- what the forms start from (one-op kernels of a kind) and their parts

// A node of a convolution (kConv or kConvTranspose).
bool is_conv_node(const ir::Graph& g, int n);
// A library kernel of strategy cudnn_conv or cudnn_conv_transpose.
bool is_conv_library_kernel(const schedule::Kernel& k);
// A cuDNN conv kernel on the channels-last path (torch's engine), its first node the convolution.
bool is_channels_last_conv(const ir::Graph& g, const schedule::Kernel& k);
// A float32 normalization node reading float32.
bool is_norm_node(const ir::Graph& g, int n);
// A generated kernel of strategy norm_two_pass.
bool is_norm_kernel(const schedule::Kernel& k);
// A cuBLAS GEMM kernel whose first node is a linear.
bool is_linear_kernel(const ir::Graph& g, const schedule::Kernel& k);
// A generated reduce kernel whose root is a reduction.
bool is_reduce_kernel(const ir::Graph& g, const schedule::Kernel& k);
// A generated scan kernel whose root is a scan.
bool is_scan_kernel(const ir::Graph& g, const schedule::Kernel& k);
// A generated loss kernel whose root is an elementwise loss (not cross entropy).
bool is_elementwise_loss_kernel(const ir::Graph& g, const schedule::Kernel& k);

// True when every node of `k` after the first is pointwise (ir::is_pointwise).
bool tail_is_pointwise(const ir::Graph& g, const schedule::Kernel& k);
// Whether `nodes` (of one kernel, in order) are pointwise or views read in place: every view op
// (ir/strided_view.h) reads a value made outside `nodes` or another view of them, and the views compose to
// strides (a reshape torch would copy does not). The generated readers (codegen's elementwise chains and
// prologues) then read each view's source at the view's strides instead of a gathered copy.
bool reads_through_views(const ir::Graph& g, const std::vector<int>& nodes);
// The view node `node` makes of the tensor it reads, following the views among `nodes` (a kernel's) back to a
// value made outside them; nullopt when the views do not compose to strides.
std::optional<ir::StridedView> view_in_kernel(const ir::Graph& g, int node, const std::vector<int>& nodes);
// Whether every view among `nodes` (reads_through_views) walks its source's memory with stride 1 (or -1, or
// 0 for a broadcast) along its last dim: a thread per element then reads coalesced. A view that moves
// the innermost dim (a transpose) reads 4 of every 32 bytes it fetches; the tiled permute kernel does not.
bool views_read_coalesced(const ir::Graph& g, const std::vector<int>& nodes);
// Whether `k` has more than one node and every node but its last is pointwise or a view read in place
// (reads_through_views): the shape of a kernel a prologue skill made (the caller checks the last node's kind).
bool has_pointwise_prologue(const ir::Graph& g, const schedule::Kernel& k);

// ---- the forms

bool is_conv_epilogue(const ir::Graph& g, const schedule::Kernel& k);
bool is_norm_epilogue(const ir::Graph& g, const schedule::Kernel& k);
bool is_linear_epilogue(const ir::Graph& g, const schedule::Kernel& k);
bool is_reduce_prologue(const ir::Graph& g, const schedule::Kernel& k);
bool is_scan_prologue(const ir::Graph& g, const schedule::Kernel& k);
bool is_loss_prologue(const ir::Graph& g, const schedule::Kernel& k);
bool is_scan_reverse(const ir::Graph& g, const schedule::Kernel& k);
bool is_scan_exclusive(const ir::Graph& g, const schedule::Kernel& k);

// ---- conv_reduce_epilogue: the channel consumers a channels-last conv's pass back computes

// The channel count up to which the pass's tile (32 positions x C channels of fp32) fits the 48 KiB
// of static shared memory with room for its statistics.
inline constexpr int64_t kMaxChannelConsumerChannels = 352;

// What conv_reduce_epilogue can compute in a conv's pass back, reading a float32 tensor [N, C, spatial...]:
//  - kChannels: softmax / log_softmax over dim 1, or sum / mean / amax / amin over dims {1} alone, with
//    1 to kMaxChannelConsumerChannels channels;
//  - kSpatial: sum / mean / amax / amin over every spatial dim (and no other), or an adaptive average
//    pool to size 1, with C a multiple of 4 up to 1024 (threads take 4 channels each) and N <= 65535
//    (a grid dim).
//  - kNorm: instance or batch norm with batch statistics, or group norm, under the same conditions as kSpatial:
//    the statistics come from the rows like a spatial reduction, then the transpose back to NCHW
//    normalizes each value (and computes the chains around the norm) on its way.
//  - kPool: a 2-d or 3-d max or average pool of non-overlapping windows (kernel = stride, no padding), with
//    C up to kMaxChannelConsumerChannels: each window read from the rows once, the pooled tile written
//    to NCHW through the chain after it.
//  - kRowNorm: a layer norm over the last dim alone, of W positions (is_row_norm_width), C a multiple of 4:
//    the transpose back's tile (32 channels x 128 positions) holds whole rows of the last dim, so it
//    normalizes them before it stores them (no NCHW write and read between the conv and the norm).
enum class ConsumerKind { kNone, kChannels, kSpatial, kNorm, kPool, kRowNorm };
// The last-dim lengths kRowNorm takes: divisors of the tile's 128 positions that keep whole 16-byte
// stores (4 to 128, powers of two).
inline bool is_row_norm_width(int64_t w) {
  return w >= 4 && w <= 128 && (w & (w - 1)) == 0;
}
ConsumerKind consumer_kind(const ir::Graph& g, const ir::Node& n);
inline bool is_channel_consumer(const ir::Graph& g, const ir::Node& n) {
  return consumer_kind(g, n) != ConsumerKind::kNone;
}

// True for a kernel conv_reduce_epilogue made: a channels-last cuDNN conv (or conv_transpose) kernel whose first
// node is the convolution, then pointwise nodes, one channel consumer (is_channel_consumer), then pointwise nodes.
bool is_conv_reduce_epilogue(const ir::Graph& g, const schedule::Kernel& k);

}  // namespace kforge::kernels
