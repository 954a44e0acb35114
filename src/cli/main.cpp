// kforge: the command-line entry point (CLI11); each subcommand lives in commands.cpp.
#include <CLI/CLI.hpp>

#include "cli/agent_command.h"
#include "cli/catalogue_command.h"
#include "cli/commands.h"
#include "cli/costmodel_command.h"
#include "cli/env_command.h"
#include "cli/explore_command.h"
#include "cli/options.h"
#include "cli/synth_command.h"
#include "cli/train_command.h"

int main(int argc, char** argv) {
  using namespace kforge::cli;
  CLI::App app{
      "kforge: PyTorch models (KernelBench format) to verified, fast CUDA kernels.\n"
      "Without a GPU, timings come from the cost model and are marked predicted."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kforge 0.1.0");

  auto add_disable_skill = [](CLI::App* cmd, CommonOptions& c) {
    cmd->add_option("--disable-skill", c.disabled_skills, "leave this skill out of the default planner (repeatable)");
  };
  auto add_common = [&](CLI::App* cmd, CommonOptions& c) {
    add_protocol_option(cmd, c.protocol);
    cmd->add_option("-j,--jobs", c.jobs, "parallel nvcc jobs (default: all cores)")->check(CLI::NonNegativeNumber);
    cmd->add_flag("--json", c.json, "print the report as JSON instead of a table");
    add_disable_skill(cmd, c);
  };

  ImportArgs import_args;
  auto* imp = app.add_subcommand("import", "trace a problem file into graph JSON");
  imp->add_option("problem", import_args.problem, "KernelBench-format problem (.py)")->required();
  imp->add_option("-o,--out", import_args.out, "write the graph here (default: stdout)");
  add_common(imp, import_args.common);

  PlanArgs plan_args;
  auto* plan = app.add_subcommand("plan", "make the first schedule (one kernel per op) for a problem or graph");
  plan->add_option("input", plan_args.input, "problem (.py) or graph (.json)")->required();
  plan->add_option("-o,--out", plan_args.out, "write the schedule here (default: stdout)");
  plan->add_option("--precision", plan_args.precision,
                   "contraction precision: fp32, tf32 or 3xtf32 (default: fp32; TF32 where the protocol's tolerance "
                   "allows it, else 3xTF32 for GEMMs large enough)")
      ->check(CLI::IsMember({"fp32", "tf32", "3xtf32"}));
  add_common(plan, plan_args.common);

  BuildArgs build_args;
  auto* build = app.add_subcommand("build", "generate CUDA and build it with nvcc (sm_90a)");
  build->add_option("input", build_args.input, "problem (.py) or graph (.json)")->required();
  build->add_option("--schedule", build_args.schedule, "a schedule .json from `kforge plan` (default: plan afresh)");
  build->add_option("--out", build_args.out_dir, "output directory (default: out/<name>)");
  build->add_flag("--force", build_args.force, "write into an existing directory kforge did not make");
  add_common(build, build_args.common);

  OptimizeArgs opt_args;
  auto* opt = app.add_subcommand("optimize", "import, plan, generate, build and evaluate a problem");
  opt->add_option("problem", opt_args.problem, "KernelBench-format problem (.py)")->required();
  opt->add_option("--out", opt_args.out_dir, "output directory (default: out/<name>)");
  opt->add_option("--device", opt_args.device, "auto, cpu (cost model) or cuda (GPU harness)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  opt->add_flag("--force", opt_args.force, "write into an existing directory kforge did not make");
  opt->add_option("--trials", opt_args.trials, "timed trials per variant on the GPU")->check(CLI::PositiveNumber);
  opt->add_option("--policy", opt_args.policy,
                  "the agent's policy over the skills: learned (the policy kforge ships, policies/README.md; the "
                  "default where kforge has libtorch), heuristic (SKILL.md priorities; the default otherwise), "
                  "search (beam over the cost model) or random; it judges candidates on the --device: cost-model "
                  "predictions on cpu, GPU measurements on cuda")
      ->check(CLI::IsMember({"learned", "heuristic", "search", "random"}));
  opt->add_option("--turns", opt_args.turns, "the agent's turns, at most (default 200)")->check(CLI::PositiveNumber);
  opt->add_option("--correction", opt_args.correction,
                  "judge the agent's candidates on the cost model corrected by this `kforge costmodel fit --out` file "
                  "(--device cpu; with --planned on the GPU, the plan is made on it)");
  opt->add_option("--checkpoint", opt_args.checkpoint,
                  "plan with the learned policy of this `kforge train` checkpoint (in place of --policy)");
  opt->add_flag("--planned", opt_args.planned,
                "the policy plays its episode on the cost model (free); the --device judges the first schedule and "
                "the plan's end, and the policy goes on from there with every turn judged until it stops");
  opt->add_option("--bundle", opt_args.bundle,
                  "also write an audit bundle (FILE.tar.gz) of the result: sources, schedule, build log, report, an "
                  "upstream-KernelBench export and a script that runs upstream's evaluator on it");
  add_common(opt, opt_args.common);
  add_timing_options(opt, opt_args.common.timing);

  EvaluateArgs eval_args;
  auto* eval = app.add_subcommand(
      "evaluate", "verify (and time) a ModelNew file against its problem on the GPU, in a separate worker process");
  eval->add_option("problem", eval_args.problem, "KernelBench-format problem (.py)")->required();
  eval->add_option("candidate", eval_args.candidate, "a file defining ModelNew (.py)")->required();
  eval->add_option("--trials", eval_args.trials, "timed trials per variant")->check(CLI::PositiveNumber);
  eval->add_flag("!--no-profile", eval_args.profile, "verify only; do not time");
  eval->add_option("--timeout", eval_args.timeout, "seconds before the worker is killed (outcome timeout)")
      ->check(CLI::PositiveNumber);
  eval->add_flag("!--no-static-check", eval_args.static_check,
                 "skip the static checks of the candidate's source (to test the runtime checks alone)");
  eval->add_flag("--static-only", eval_args.static_only,
                 "run the static checks alone (any machine, no GPU): outcome forbidden or ok, nothing verified");
  eval->add_option("--cuda", eval_args.cuda_files, "also check this CUDA source with the generated code's rules")
      ->check(CLI::ExistingFile);
  add_protocol_option(eval, eval_args.common.protocol);
  eval->add_flag("--json", eval_args.common.json, "print the result as JSON");
  add_timing_options(eval, eval_args.common.timing);

  BenchArgs bench_args;
  auto* bench = app.add_subcommand(
      "bench", "evaluate every problem of a suite: pass / faster / geomean tables vs eager and torch.compile");
  bench->add_option("--suite", bench_args.suite, "a directory of problems, or of level*/ directories")->required();
  bench->add_option("--out", bench_args.out_dir, "where candidates are built (default: out/bench-<suite>-<protocol>)");
  bench->add_option("--json", bench_args.json_out, "also write the JSON report to this file");
  bench->add_option("--device", bench_args.device, "auto, cpu (cost model) or cuda (GPU harness)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  bench->add_option("--levels", bench_args.levels, "comma-separated level directories (default: all)");
  bench->add_option("--only", bench_args.only, "comma-separated problem names (file stems)");
  bench->add_option("--trials", bench_args.trials, "timed trials per variant on the GPU")->check(CLI::PositiveNumber);
  bench->add_option("--workers", bench_args.workers, "parallel verification workers on the GPU")
      ->check(CLI::Range(1, 16));
  bench->add_flag("!--no-profile", bench_args.profile, "verify only; do not time");
  bench
      ->add_option("--time-limit", bench_args.time_limit,
                   "seconds; past it no new problem is started and the table covers what finished")
      ->check(CLI::NonNegativeNumber);
  bench->add_flag("--force", bench_args.force,
                  "write into an existing directory kforge did not make; overwrite an existing --bundle file");
  bench->add_option("--bundle", bench_args.bundle,
                    "also write an audit bundle (FILE.tar.gz): every problem's sources, schedule, build log, record, "
                    "an upstream-KernelBench export and a script that runs upstream's evaluator on them");
  bench->add_option(
      "--db", bench_args.db,
      "record every candidate measured on the GPU in this measurement database (SQLite; created if absent)");
  bench->add_flag("--resume", bench_args.resume,
                  "continue an interrupted run in --out: problems that have results are not built or verified again");
  add_protocol_option(bench, bench_args.common.protocol);
  bench->add_option("-j,--jobs", bench_args.common.jobs, "problems built at once (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  add_disable_skill(bench, bench_args.common);
  add_timing_options(bench, bench_args.common.timing);

  ExportArgs export_args;
  auto* exp = app.add_subcommand(
      "export", "write the program as one self-contained KernelBench ModelNew file (CUDA inline, load_inline)");
  exp->add_option("input", export_args.input,
                  "an output directory of optimize/build, a problem (.py) or a graph (.json)")
      ->required();
  exp->add_option("--schedule", export_args.schedule, "a schedule .json (default: the directory's, or plan afresh)");
  exp->add_option("--format", export_args.format,
                  "kernelbench (one ModelNew file) or cuda-agent (a workspace directory: SKILL.md, model.py, "
                  "model_new.py, kernels/, evaluator/)")
      ->check(CLI::IsMember({"kernelbench", "cuda-agent"}));
  exp->add_option("-o,--out", export_args.out, "the file to write (default: stdout)");
  exp->add_flag("--force", export_args.force, "overwrite the output file if it exists");
  exp->add_flag("--allow-library-only", export_args.allow_library_only,
                "write a program whose kernels only call cuBLAS/cuDNN (no __global__ of its own) anyway: kforge's "
                "harness runs it, upstream KernelBench's strict checker rejects it");
  add_common(exp, export_args.common);

  SynthArgs synth_args;
  auto* synth = app.add_subcommand("synth", "synthesize training tasks (filtered, decontaminated), the paper's way");
  synth->add_option("--count", synth_args.count, "accepted tasks wanted")->check(CLI::PositiveNumber);
  synth->add_option("--seed", synth_args.seed, "the seed every draw comes from");
  synth->add_option("--out", synth_args.out, "the dataset directory")->required();
  synth->add_option("--against", synth_args.against, "benchmark directories for the contamination check");
  synth->add_option("--max-ops", synth_args.max_ops, "operators per task, at most")->check(CLI::Range(1, 8));
  synth->add_option("-j,--jobs", synth_args.jobs, "parallel workers (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  synth->add_flag("--resume", synth_args.resume, "continue an interrupted run in --out");
  synth->add_flag("--json", synth_args.json, "print the report as JSON");

  TrainArgs train_args;
  auto* train = add_train_subcommand(app, train_args);
  ExploreArgs explore_args;
  auto* explore = add_explore_subcommand(app, explore_args);
  EnvArgs env_args;
  auto* env = add_env_subcommand(app, env_args);
  ServeArgs serve_args;
  auto* serve = add_serve_subcommand(app, serve_args);

  CatalogueArgs catalogue_args;
  auto* catalogue = add_catalogue_subcommand(app, catalogue_args);

  SelftestArgs selftest_args;
  auto* selftest = app.add_subcommand("selftest", "kforge's own checks against adversarial fixtures");
  auto* threats = selftest->add_subcommand("threats", "every threat fixture against the check meant to catch it");
  selftest->require_subcommand(1);
  threats->add_flag("--gpu", selftest_args.gpu, "also run the runtime fixtures on the GPU");
  threats->add_option("--json", selftest_args.json_out, "write the verdicts to this file");
  threats->add_option("--fixtures", selftest_args.fixtures, "the fixture directory (default: tests/threats)");

  auto* costmodel =
      app.add_subcommand("costmodel", "the measurement database and the learned correction of the roofline");
  costmodel->require_subcommand(1);
  CostmodelIngestArgs ingest_args;
  auto* ingest =
      costmodel->add_subcommand("ingest", "record the GPU results of `kforge bench` JSON in a measurement database");
  ingest->add_option("bench_json", ingest_args.bench_json, "bench JSON files (kforge bench --json)")
      ->required()
      ->check(CLI::ExistingFile);
  ingest->add_option("--db", ingest_args.db, "the measurement database (SQLite; created if absent)")->required();
  ingest->add_option("--candidates", ingest_args.candidates,
                     "the bench run's --out directory, for JSON written before records carried features");
  CostmodelFitArgs fit_args;
  auto* fit = costmodel->add_subcommand("fit", "train the roofline's correction; Spearman on held-out problems");
  fit->add_option("--db", fit_args.db, "the measurement database")->required();
  fit->add_option("--device", fit_args.device, "only measurements of this device (default: all)");
  fit->add_option("--protocol", fit_args.protocol, "only measurements of this protocol (default: all)");
  fit->add_option("--held-out", fit_args.held_out, "fraction of problems held out to measure rank quality")
      ->check(CLI::Range(0.01, 0.99));
  fit->add_option("--lambda", fit_args.lambda, "ridge penalty")->check(CLI::NonNegativeNumber);
  fit->add_option("--out", fit_args.out, "write the correction (fitted on all rows) here");
  fit->add_option("--json", fit_args.json_out, "write the report as JSON here");
  fit->add_flag("--force", fit_args.force, "overwrite --out / --json");

  AgentArgs agent_args;
  auto* agent = add_agent_subcommand(app, agent_args);

  bool ops_json = false;
  auto* ops = app.add_subcommand("ops", "list the op registry");
  ops->add_flag("--json", ops_json, "as JSON");
  bool skills_json = false, skills_names = false;
  auto* skills_cmd = app.add_subcommand("skills", "list the skill catalogue, in the default planner's order");
  skills_cmd->add_flag("--json", skills_json, "as JSON");
  skills_cmd->add_flag("--names", skills_names, "names only, one per line");
  SkillSitesArgs site_args;
  CLI::App *sites_cmd = nullptr, *apply_cmd = nullptr;
  add_skill_site_subcommands(skills_cmd, site_args, &sites_cmd, &apply_cmd);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUserError;
  }
  if (*imp) return run_import(import_args);
  if (*plan) return run_plan(plan_args);
  if (*build) return run_build(build_args);
  if (*opt) return run_optimize(opt_args);
  if (*exp) return run_export(export_args);
  if (*bench) return run_bench(bench_args);
  if (*eval) return run_evaluate(eval_args);
  if (*synth) return run_synth(synth_args);
  if (*train) return run_train(train_args);
  if (*explore) return run_explore(explore_args);
  if (*env) return run_env(env_args);
  if (*serve) {
    serve_args.rest = serve->remaining();
    return run_serve(serve_args);
  }
  if (*catalogue) return run_catalogue(catalogue_args);
  if (*threats) return run_selftest(selftest_args);
  if (*ingest) return run_costmodel_ingest(ingest_args);
  if (*fit) return run_costmodel_fit(fit_args);
  if (*ops) return run_ops(ops_json);
  if (*agent) return run_agent(agent_args);
  if (*sites_cmd) return run_skill_sites(site_args);
  if (*apply_cmd) return run_skill_apply(site_args);
  if (*skills_cmd) return run_skills(skills_json, skills_names);
  return kExitUserError;
}
