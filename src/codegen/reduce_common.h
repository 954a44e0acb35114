// Shared machinery of the reduction-like emitters (reduce, argreduce, norm statistics, losses): a
// reduction of some dims of a tensor, described by its coalesced layout, generated as
//   - a lane-group kernel (reduced dims innermost, rows of at most 16: a group of lanes per output),
//   - a warp kernel (reduced dims innermost, short rows: one warp per output),
//   - a row kernel (reduced dims innermost: one block per output, or per chunk of it),
//   - a column kernel (a kept dim innermost: threads over consecutive outputs, coalesced),
// with the reduction split over several blocks when there are few outputs; the per-chunk partial
// accumulators go to ctx->workspace and a second, deterministic pass merges them in a fixed order.
//
// The caller defines an accumulator struct in the device code (before the kernels) with
//   __device__ void add(...)            (whatever its `add` statement calls)
//   __device__ void merge(const A& o)   (combine; must be associative, order may be any)
//   __device__ A shfl_down(int d) const (warp shuffle of every field)
// and an `init` statement that puts it in its identity state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kforge::codegen::reduce {

struct Layout {
  std::vector<int64_t> kept_sizes, kept_strides;  // kept dims, outer to inner (input element strides)
  std::vector<int64_t> red_sizes, red_strides;    // reduced dims, outer to inner
  int64_t M = 1;                                  // number of outputs (product of kept sizes)
  int64_t N = 1;                                  // elements reduced into each output (product of reduced sizes)
  bool rows = true;                               // the innermost input dim is reduced (or nothing is kept)
  // One reduced dim of stride 1: rows of N contiguous elements.
  bool contiguous_rows() const { return rows && red_sizes.size() == 1 && red_strides[0] == 1; }
};

// The layout of reducing `reduced` (sorted, normalized dims) of a contiguous tensor of `shape`:
// size-1 dims dropped, neighbouring dims of the same kind merged.
Layout make_layout(const ir::Shape& shape, const std::vector<int64_t>& reduced);
// The same over a strided tensor (a view read in place: `strides` in elements, any sign, 0 for a broadcast
// dim): neighbouring dims of one kind merge only where they walk memory as one dim.
Layout make_layout(const ir::Shape& shape, const std::vector<int64_t>& strides, const std::vector<int64_t>& reduced);

// A C++ device function `long long name(long long i)`: the element offset of linear index i over
// dims of `sizes` (row-major) with element `strides`; 32-bit index arithmetic when `total` fits.
std::string index_fn(const std::string& name, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                     int64_t total);

struct Spec {
  std::string prefix;  // unique C identifier prefix inside the .cu file ("k3_r")
  Layout layout;
  std::string acc;     // the accumulator type's name
  int acc_bytes = 16;  // an upper bound of sizeof(acc), for the workspace size (checked by static_assert)
  std::string elem;    // type of one loaded element
  std::string load;    // expression of `off` (an input element offset, long long): the element
  std::string init;  // statement: put `a` in its identity state; may use `base` (offset of the output's first element)
  std::string add;   // statement: add element `v` (type elem) with reduced index `j` (long long) to `a`
  std::string add_vec;   // optional, with vec_ptr: add the four consecutive elements v0..v3 (type elem, in order,
                         // indices not used) at once; must equal four `add`s up to rounding
  std::string vec_elem;  // the type of v0..v3 for add_vec (default: elem), e.g. float lanes summed in
                         // float before one double add where `add` takes doubles
  std::string store;     // statement: consume the final `a` of output `o` (long long); may use `base`
  std::string params;   // kernel parameters, comma separated ("const float* __restrict__ in0, float* __restrict__ out")
  std::string args;     // the host expressions of those parameters, same order
  std::string vec_ptr;  // a const float* parameter whose element at `off` is exactly `vec_ptr[off]` (enables float4
                        // loads on contiguous rows), or ""
  std::string vec_host;  // the host expression of that pointer
  // With vec_ptr: a second const float* read at the same offsets (or none), and the element as an
  // expression of the lanes V0 (vec_ptr[off]) and V1 (vec_ptr2[off]) and of jl (the lane's reduced
  // index: its offset is base + jl), of type elem; it must equal `load`.
  // vec_value empty: one pointer, the element is its lane.
  std::string vec_ptr2, vec_host2, vec_value;
  size_t workspace_offset = 0;  // where its partials go in ctx->workspace
  int block = 256;
};

struct Code {
  std::string device;  // offset functions, kernels
  std::string host;    // statements for the kernel's extern "C" function (use ctx)
  int64_t launches = 0;
  size_t workspace_bytes = 0;  // end of its workspace use: workspace_offset + partials
  std::string mode;            // "warp", "rows", "cols" (with ", split S" when split): for tests and reports
};

Code emit(const Spec& spec);

// Device helpers the generated reductions use: kf_isnan, kf_warp_merge, kf_block_merge.
std::string device_prelude();

// The online log-sum-exp accumulator `A` over elements of type CT ("float" or "double"): fields
// m (running max) and s (sum of exp(x - m), double), add(CT x), merge, shfl_down; identity is
// m = -INFINITY, s = 0. NaN sticks; a +inf max keeps s meaningless (callers special-case it).
// For float elements also add4(x0, x1, x2, x3): four elements with one rescale (Spec::add_vec), and
// rescale factors (in [0, 1]) computed with a float exp.
std::string lse_acc(const std::string& A, const std::string& CT);

// "123LL"
std::string ll(int64_t v);
size_t align256(size_t n);

// The compute type of loads of a tensor element type: float for 16/32-bit floats, double for
// float64, long long for integers and bool.
std::string compute_type(ir::DType t);
// cuda_fp16/bf16 includes when any of the types is a 16-bit float.
std::string half_headers(const std::vector<ir::DType>& types);

}  // namespace kforge::codegen::reduce
