// Command-line options that several subcommands share, with their help text from the registries
// (sandbox/protocols.def, timing_methods.def, baselines.def): written once here, not per command.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "sandbox/protocol.h"

namespace kforge::cli {

inline void add_protocol_option(CLI::App* cmd, std::string& protocol) {
  cmd->add_option("--protocol", protocol, sandbox::protocol_help())->check(CLI::IsMember(sandbox::protocol_names()));
}

// --timing, --fresh-inputs and --baselines, for the commands that time on the GPU.
inline void add_timing_options(CLI::App* cmd, sandbox::Timing& timing) {
  cmd->add_option("--timing", timing.method, sandbox::timing_method_help())
      ->check(CLI::IsMember(sandbox::timing_method_names()));
  cmd->add_flag("--fresh-inputs", timing.fresh_inputs,
                "time every call on a different random input set (defeats outputs cached across calls)");
  cmd->add_option_function<std::string>(
      "--baselines",
      [&timing](const std::string& list) {
        auto names = sandbox::parse_baselines(list);
        if (!names.is_ok()) throw CLI::ValidationError("--baselines", names.status().message());
        timing.baselines = names.value();
      },
      sandbox::baseline_help() + " (default: eager,compile,compile_tf32)");
}

}  // namespace kforge::cli
