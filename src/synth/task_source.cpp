// Rendering a task's Python source (KernelBench layout: imports, Model, constants, get_inputs,
// get_init_inputs).
#include "synth/task_source.h"

#include <algorithm>

namespace kforge::synth {

namespace {

// Python keywords and names the file itself uses: never a constant's or an argument's name.
const std::vector<std::string> kReserved = {
    "torch", "nn",  "F",   "self", "x",   "Model", "get_inputs", "get_init_inputs", "batch_size", "super",
    "input", "max", "min", "sum",  "abs", "pow",   "len",        "range",           "lambda"};

}  // namespace

TaskSource::TaskSource() {
  constants_.push_back({"batch_size", "0", false});
  taken_ = kReserved;
}

std::string TaskSource::unique(std::string_view base) {
  std::string name(base);
  for (int k = 2; std::find(taken_.begin(), taken_.end(), name) != taken_.end(); ++k)
    name = std::string(base) + "_" + std::to_string(k);
  taken_.push_back(name);
  return name;
}

std::string TaskSource::constant(std::string_view base, std::string value, bool init_arg) {
  std::string name = unique(base);
  constants_.push_back({name, std::move(value), init_arg});
  return name;
}

void TaskSource::use_as_init_arg(const std::string& name) {
  for (auto& c : constants_) {
    if (c.name == name && name != "batch_size") c.init_arg = true;
  }
}

std::string TaskSource::member(std::string_view base) {
  std::string name(base);
  for (int k = 2; std::find(members_.begin(), members_.end(), name) != members_.end(); ++k)
    name = std::string(base) + "_" + std::to_string(k);
  members_.push_back(name);
  return name;
}

std::string TaskSource::input(std::string_view base, std::string make) {
  std::string name = unique(base);
  inputs_.push_back({name, std::move(make)});
  return name;
}

std::string TaskSource::render(int64_t batch) const {
  std::string init_params;
  std::string init_args;
  for (const auto& c : constants_) {
    if (!c.init_arg) continue;
    init_params += ", " + c.name;
    init_args += (init_args.empty() ? "" : ", ") + c.name;
  }
  std::string forward_params = "self, x";
  for (const auto& in : inputs_) forward_params += ", " + in.name;

  std::string s = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n";
  s += "class Model(nn.Module):\n";
  s += "    \"\"\"" + title_ + "\"\"\"\n\n";
  s += "    def __init__(self" + init_params + "):\n";
  s += "        super().__init__()\n";
  for (const auto& l : init_) s += "        " + l + "\n";
  s += "\n    def forward(" + forward_params + "):\n";
  for (const auto& l : forward_) s += "        " + l + "\n";
  s += "        return x\n\n\n";
  for (const auto& c : constants_)
    s += c.name + " = " + (c.name == "batch_size" ? std::to_string(batch) : c.value) + "\n";
  s += "\n\ndef get_inputs():\n";
  std::string list = "x";
  s += "    x = torch.rand(" + input_shape_ + ")\n";
  for (const auto& in : inputs_) {
    s += "    " + in.name + " = " + in.make + "\n";
    list += ", " + in.name;
  }
  s += "    return [" + list + "]\n\n\n";
  s += "def get_init_inputs():\n";
  s += "    return [" + init_args + "]\n";
  return s;
}

}  // namespace kforge::synth
