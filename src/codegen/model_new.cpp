// Writes model_new.py: the problem's own source (so Model, its constructor signature, parameter
// order and initialisation are exactly the reference's) followed by ModelNew(Model), whose forward
// only allocates tensors and calls the program library.
#include "codegen/model_new.h"

#include <algorithm>
#include <sstream>

#include "codegen/program.h"

namespace kforge::codegen {

namespace {

std::string py_shape(const ir::Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << s[i] << (s.size() == 1 || i + 1 < s.size() ? ", " : "");
  os << ")";
  return os.str();
}

std::string py_tensor_specs(const ir::Graph& g, const std::vector<ir::ValueIndex>& values) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < values.size(); ++i) {
    os << (i ? ", " : "") << "(" << py_shape(g.type(values[i]).shape) << ", torch."
       << ir::dtype_name(g.type(values[i]).dtype) << ")";
  }
  os << "]";
  return os.str();
}

// forward's arguments: (input index, name, None) for a tensor, (None, name, value) for a constant.
std::string py_forward_args(const ir::Graph& g) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < g.forward_args.size(); ++i) {
    const auto& a = g.forward_args[i];
    os << (i ? ", " : "") << "(";
    if (a.input != ir::kNoValue) {
      os << g.value(a.input).owner << ", " << Json(a.name).dump() << ", None";
    } else {
      std::string v = a.constant.is_boolean() ? (a.constant.get<bool>() ? "True" : "False") : a.constant.dump();
      os << "None, " << Json(a.name).dump() << ", " << v;
    }
    os << ")";
  }
  os << "]";
  return os.str();
}

// A param's (shape, dtype) as the model holds it: a complex one is its real view in the graph (last dim 2).
std::string py_param_spec(const ir::Graph& g, const ir::GraphParam& pr) {
  const ir::TensorType& t = g.type(pr.value);
  if (!pr.complex_view) return py_shape(t.shape) + ", torch." + std::string(ir::dtype_name(t.dtype));
  const ir::Shape shape(t.shape.begin(), t.shape.end() - 1);
  const char* dtype = t.dtype == ir::DType::kFloat64   ? "complex128"
                      : t.dtype == ir::DType::kFloat16 ? "complex32"
                                                       : "complex64";
  return py_shape(shape) + ", torch." + dtype;
}

bool has_attributes(const ir::Graph& g) {
  return std::any_of(g.params().begin(), g.params().end(), [](const ir::GraphParam& p) { return p.attribute; });
}

}  // namespace

std::string model_new_tables(const ir::Graph& g, const Program& p) {
  std::vector<ir::ValueIndex> ins, outs;
  for (const auto& in : g.inputs()) ins.push_back(in.value);
  for (auto o : g.outputs()) outs.push_back(o);
  std::ostringstream params;
  params << "[";
  for (size_t i = 0; i < g.params().size(); ++i) {
    const auto& pr = g.params()[i];
    params << (i ? ", " : "") << "(" << Json(pr.path).dump() << ", " << (pr.is_buffer ? "True" : "False") << ", "
           << py_param_spec(g, pr) << ")";
  }
  params << "]";
  std::ostringstream attributes;
  attributes << "[";
  for (const auto& pr : g.params())
    if (pr.attribute) attributes << (attributes.tellp() > 1 ? ", " : "") << Json(pr.path).dump();
  attributes << "]";
  std::ostringstream os;
  os << "_KF_INPUTS = " << py_tensor_specs(g, ins) << "\n"
     << "_KF_ARGS = " << py_forward_args(g) << "  # (input index, name, None) or (None, name, constant)\n"
     << "_KF_PARAMS = " << params.str() << "  # (path, is_buffer, shape, dtype)\n"
     << (has_attributes(g)
             ? "_KF_ATTRIBUTES = " + attributes.str() + "  # tensors the model keeps as plain attributes\n"
             : "")
     << "_KF_OUTPUTS = " << py_tensor_specs(g, outs) << "\n"
     << "_KF_SCRATCH_BYTES = " << p.buffers.total_bytes() << "\n";
  return os.str();
}

std::string model_new_class(const ir::Graph& g, const std::string& doc, const std::string& call,
                            const std::string& rebuild, const std::string& params_arg, bool copies_views) {
  std::ostringstream os;
  os << "def _kf_check(kind, name, t, shape, dtype, device, views_ok=False):\n"
     << "    if not isinstance(t, torch.Tensor):\n"
     << "        raise TypeError(\"kforge ModelNew: %s %s must be a tensor, got %s\" % (kind, name, "
        "type(t).__name__))\n"
     << "    if tuple(t.shape) != shape or t.dtype != dtype:\n"
     << "        raise ValueError(\"kforge ModelNew: %s %s is %s%s, but the kernels were built for %s%s; " << rebuild
     << " for the new shape\"\n"
     << "                         % (kind, name, t.dtype, tuple(t.shape), dtype, shape))\n"
     << "    if t.device != device:\n"
     << "        raise ValueError(\"kforge ModelNew: %s %s is on %s, but the other inputs are on %s\" % (kind, name, "
        "t.device, device))\n"
     << "    if not views_ok and not t.is_contiguous():\n"
     << "        raise ValueError(\"kforge ModelNew: %s %s must be a contiguous tensor (a slice or a transpose is a "
        "strided view: give its .contiguous() copy; the kernels read dense tensors)\" % (kind, name))\n\n\n"
     << "class ModelNew(Model):\n"
     << "    \"\"\"" << doc << "\"\"\"\n\n"
     << (has_attributes(g)
             ? "    def __init__(self, *args, **kwargs):\n"
               "        super().__init__(*args, **kwargs)\n"
               "        # A tensor the model keeps as a plain attribute becomes a non-persistent buffer, which\n"
               "        # model.to(device) moves (the kernels read it on the inputs' device).\n"
               "        for path in _KF_ATTRIBUTES:\n"
               "            owner_path, _, name = path.rpartition(\".\")\n"
               "            owner = self.get_submodule(owner_path) if owner_path else self\n"
               "            owner.register_buffer(name, owner.__dict__.pop(name), persistent=False)\n\n"
             : "")
     << "    # State kept across calls: where each parameter lives, the last parameter pointers (checked again only\n"
     << "    # when they change) and one scratch buffer per device and stream, so a steady caller passes the same\n"
     << "    # pointers on every call and the program replays its CUDA graph (kforge_runtime.cu). Never outputs.\n"
     << "    def _kf_param_slots(self):\n"
     << "        # Each parameter's owner table and name, found once: every call reads the parameter from its owner,\n"
     << "        # so one replaced or moved (model.to, load_state_dict(assign=True)) is seen. After replacing a\n"
     << "        # submodule, call kforge_refresh().\n"
     << "        slots = self.__dict__.get(\"_kf_slots\")\n"
     << "        if slots is None:\n"
     << "            slots = []\n"
     << "            for path, is_buffer, _shape, _dtype in _KF_PARAMS:\n"
     << "                owner_path, _, name = path.rpartition(\".\")\n"
     << "                owner = self.get_submodule(owner_path) if owner_path else self\n"
     << "                slots.append((owner._buffers if is_buffer else owner._parameters, name))\n"
     << "            self.__dict__[\"_kf_slots\"] = slots\n"
     << "        return slots\n\n"
     << "    def _kf_params(self, device):\n"
     << "        params = [table[name] for table, name in self._kf_param_slots()]\n"
     << "        pointers = [t.data_ptr() for t in params]\n"
     << "        cached = self.__dict__.get(\"_kf_param_pointers\")\n"
     << "        if cached is None or cached[0] != pointers or cached[1] != device:\n"
     << "            for (path, _is_buffer, shape, dtype), t in zip(_KF_PARAMS, params):\n"
     << "                _kf_check(\"parameter\", path, t, shape, dtype, device)\n"
     << "            cached = (pointers, device, " << params_arg << ")\n"
     << "            self.__dict__[\"_kf_param_pointers\"] = cached\n"
     << "        return params, cached[2]\n\n"
     << "    def _kf_scratch(self, device):\n"
     << "        stream = torch.cuda.current_stream(device).cuda_stream\n"
     << "        scratches = self.__dict__.setdefault(\"_kf_scratches\", {})\n"
     << "        scratch = scratches.get((device, stream))\n"
     << "        if scratch is None:\n"
     << "            scratch = torch.empty(max(_KF_SCRATCH_BYTES, 1), dtype=torch.uint8, device=device)\n"
     << "            scratches[(device, stream)] = scratch\n"
     << "        return scratch, stream\n\n"
     << "    def kforge_refresh(self):\n"
     << "        \"\"\"Forgets the parameters' owners and the scratch buffers (after replacing a submodule).\"\"\"\n"
     << "        for key in (\"_kf_slots\", \"_kf_param_pointers\", \"_kf_scratches\"):\n"
     << "            self.__dict__.pop(key, None)\n\n"
     << "    def forward(self, *args):\n"
     << "        if len(args) != len(_KF_ARGS):\n"
     << "            raise TypeError(\"kforge ModelNew: forward takes %d arguments, got %d\" % (len(_KF_ARGS), "
        "len(args)))\n"
     << "        inputs = [None] * len(_KF_INPUTS)\n"
     << "        for a, (index, name, constant) in zip(args, _KF_ARGS):\n"
     << "            if index is not None:\n"
     << "                inputs[index] = a\n"
     << "            elif a != constant:\n"
     << "                raise ValueError(\"kforge ModelNew: the kernels were built for %s = %r, got %r; " << rebuild
     << " for the new value\" % (name, constant, a))\n"
     << "        device = inputs[0].device if inputs else torch.device(\"cuda\", torch.cuda.current_device())\n"
     << "        if device.type != \"cuda\":\n"
     << "            raise ValueError(\"kforge ModelNew: inputs must be on a CUDA device, got \" + str(device))\n"
     << "        for i, (t, (shape, dtype)) in enumerate(zip(inputs, _KF_INPUTS)):\n"
     << "            # The common case in one expression; _kf_check says what is wrong otherwise.\n"
     << (copies_views
             ? "            if not (type(t) is torch.Tensor and t.dtype is dtype and t.shape == shape and t.device == "
               "device):\n"
               "                _kf_check(\"input\", str(i), t, shape, dtype, device, views_ok=True)\n"
               "            if not t.is_contiguous():  # a view (slice, transpose, expand): kforge's kernel copies it\n"
               "                inputs[i] = _kf_dense(t)\n"
             : "            if not (type(t) is torch.Tensor and t.dtype is dtype and t.shape == shape and t.device == "
               "device\n"
               "                    and t.is_contiguous()):\n"
               "                _kf_check(\"input\", str(i), t, shape, dtype, device)\n")
     << "        params, params_array = self._kf_params(device)\n"
     << "        outputs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in _KF_OUTPUTS]\n"
     << "        scratch, stream = self._kf_scratch(device)\n"
     << call << "        return outputs[0] if len(outputs) == 1 else tuple(outputs)\n";
  return os.str();
}

std::string model_new_source(const ir::Graph& g, const Program& p, const ProgramOptions& options) {
  std::ostringstream os;
  os << "# Generated by kforge for " << g.name << " (" << p.calls.size()
     << " kernels). Regenerate with `kforge optimize`; do not edit.\n"
     << "# Part 1: the problem's source, unchanged. Part 2: ModelNew, which runs the built kernels.\n\n"
     << options.reference_source << "\n\n"
     << "# ---- kforge ModelNew ----\n"
     << "import ctypes as _kf_ctypes\n"
     << "import os as _kf_os\n\n"
     << "_KF_LIBRARY = _kf_os.path.join(_kf_os.path.dirname(_kf_os.path.abspath(__file__)), \"" << options.library_file
     << "\")\n"
     << model_new_tables(g, p) << "_KF_ABI = " << kAbiVersion << "\n"
     << "_kf_lib = None\n\n\n"
     << "def _kf_load():\n"
     << "    global _kf_lib\n"
     << "    if _kf_lib is None:\n"
     << "        if not _kf_os.path.exists(_KF_LIBRARY):\n"
     << "            raise RuntimeError(\"kforge: \" + _KF_LIBRARY + \" is missing; rebuild with `kforge optimize`\")\n"
     << "        lib = _kf_ctypes.CDLL(_KF_LIBRARY)\n"
     << "        lib.kforge_forward.restype = _kf_ctypes.c_int\n"
     << "        lib.kforge_forward.argtypes = [_kf_ctypes.c_void_p] * 4 + [_kf_ctypes.c_size_t, _kf_ctypes.c_void_p]\n"
     << "        lib.kforge_last_error.restype = _kf_ctypes.c_char_p\n"
     << "        lib.kforge_dense_copy.restype = _kf_ctypes.c_int\n"
     << "        lib.kforge_dense_copy.argtypes = [_kf_ctypes.c_void_p, _kf_ctypes.c_void_p, _kf_ctypes.c_int,\n"
     << "                                          _kf_ctypes.c_void_p, _kf_ctypes.c_void_p, _kf_ctypes.c_int,\n"
     << "                                          _kf_ctypes.c_void_p]\n"
     << "        if lib.kforge_abi_version() != _KF_ABI:\n"
     << "            raise RuntimeError(\"kforge: \" + _KF_LIBRARY + \" was built for another ABI version\")\n"
     << "        _kf_lib = lib\n"
     << "    return _kf_lib\n\n\n"
     << "def kforge_release():\n"
     << "    \"\"\"Frees GPU scratch the kernels grew (kforge's harness calls it after each candidate).\"\"\"\n"
     << "    if _kf_lib is not None and hasattr(_kf_lib, \"kforge_release_scratch\"):\n"
     << "        _kf_lib.kforge_release_scratch()\n\n\n"
     << "_kf_layouts = {}  # (shape, strides) of a strided input -> its ctypes arrays, made once\n\n\n"
     << "def _kf_dense(view):\n"
     << "    \"\"\"A dense copy of a strided input, made on the current stream by the library's "
        "kforge_dense_copy.\"\"\"\n"
     << "    lib = _kf_load()\n"
     << "    shape, strides = view.shape, view.stride()\n"
     << "    layout = _kf_layouts.get((shape, strides))\n"
     << "    if layout is None:\n"
     << "        dims = _kf_ctypes.c_int64 * max(len(shape), 1)\n"
     << "        layout = _kf_layouts[(shape, strides)] = (dims(*shape), dims(*strides))\n"
     << "    dense = torch.empty(shape, dtype=view.dtype, device=view.device)\n"
     << "    rc = lib.kforge_dense_copy(dense.data_ptr(), view.data_ptr(), len(shape), layout[0], layout[1],\n"
     << "                               view.element_size(), torch.cuda.current_stream(view.device).cuda_stream)\n"
     << "    if rc != 0:\n"
     << "        raise RuntimeError(\"kforge: the dense copy of a strided input failed: \" + "
        "lib.kforge_last_error().decode(errors=\"replace\"))\n"
     << "    return dense\n\n\n"
     << "def _kf_pointers(tensors):\n"
     << "    return (_kf_ctypes.c_void_p * max(len(tensors), 1))(*[t.data_ptr() for t in tensors])\n\n\n"
     << model_new_class(g, "Model with its forward replaced by kforge's kernels (" + g.name + ").",
                        "        lib = _kf_load()\n"
                        "        rc = lib.kforge_forward(_kf_pointers(inputs), params_array, "
                        "_kf_pointers(outputs),\n"
                        "                                scratch.data_ptr(), _KF_SCRATCH_BYTES, stream)\n"
                        "        if rc != 0:\n"
                        "            raise RuntimeError(\"kforge kernel failed: \" + "
                        "lib.kforge_last_error().decode(errors=\"replace\"))\n",
                        "rebuild", "_kf_pointers(params)", true);
  return os.str();
}

}  // namespace kforge::codegen
