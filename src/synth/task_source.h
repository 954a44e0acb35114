// The KernelBench-format Python file of one synthesized task, assembled piece by piece by the
// operators of the seed library and rendered for any batch size: `Model` (constructor arguments,
// members, forward), module constants, get_inputs() and get_init_inputs().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::synth {

struct ModuleConstant {
  std::string name;
  std::string value;      // Python literal
  bool init_arg = false;  // passed to Model(...) through get_init_inputs()
};

struct ForwardInput {
  std::string name;  // forward's argument
  std::string make;  // get_inputs()'s expression for it (may use module constants and batch_size)
};

class TaskSource {
 public:
  TaskSource();

  // A module-level constant named `base` (or base_2, base_3, ... when taken); returns its name.
  std::string constant(std::string_view base, std::string value, bool init_arg);
  // Marks an existing constant as a constructor argument.
  void use_as_init_arg(const std::string& name);
  // A fresh attribute name for `self.` (conv, conv_2, ...).
  std::string member(std::string_view base);
  // A new forward argument made by get_inputs(); returns its name.
  std::string input(std::string_view base, std::string make);
  void init_line(std::string line) { init_.push_back(std::move(line)); }
  void forward_line(std::string line) { forward_.push_back(std::move(line)); }
  void set_title(std::string title) { title_ = std::move(title); }
  // get_inputs()'s shape arguments of `x`, the first input ("batch_size, in_channels, height, width").
  void set_input_shape(std::string shape_args) { input_shape_ = std::move(shape_args); }

  const std::vector<ModuleConstant>& constants() const { return constants_; }
  const std::vector<ForwardInput>& inputs() const { return inputs_; }

  // The whole file with `batch_size = batch`.
  std::string render(int64_t batch) const;

 private:
  std::string unique(std::string_view base);

  std::string title_;
  std::string input_shape_;
  std::vector<std::string> taken_;
  std::vector<ModuleConstant> constants_;  // batch_size first
  std::vector<ForwardInput> inputs_;
  std::vector<std::string> init_;
  std::vector<std::string> forward_;
  std::vector<std::string> members_;
};

}  // namespace kforge::synth
