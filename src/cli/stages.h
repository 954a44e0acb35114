// The pipeline's stages (pipeline/pipeline.h: import -> plan -> build -> evaluate) under the names the
// commands use; the commands only parse options and print.
#pragma once

#include "pipeline/pipeline.h"

namespace kforge::cli {

using pipeline::agent_summary;
using pipeline::AgentOptions;
using pipeline::AgentPlan;
using pipeline::attempt_json;
using pipeline::attempts_summary;
using pipeline::build_into;
using pipeline::BuiltProgram;
using pipeline::fallback_plans;
using pipeline::FallbackPlan;
using pipeline::falls_back;
using pipeline::import_plan_build;
using pipeline::kShippedPolicy;
using pipeline::library_file_name;
using pipeline::load_graph_or_problem;
using pipeline::load_or_plan_schedule;
using pipeline::measured_summary;
using pipeline::plan_with_agent;
using pipeline::predicted_result;
using pipeline::prepare_out_dir;
using pipeline::Protocol;
using pipeline::protocol_from_name;
using pipeline::reference_source_of;
using pipeline::report_json;
using pipeline::report_table;
using pipeline::same_program;
using pipeline::Turn;
using pipeline::TurnOptions;
using pipeline::written_schedule;

}  // namespace kforge::cli
