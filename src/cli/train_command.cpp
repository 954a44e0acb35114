// kforge train: the paper's training stages for the learned policy (issue #5); see src/rl/train.h.
#include "cli/train_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "base/files.h"
#include "cli/commands.h"
#include "cli/options.h"
#ifdef KFORGE_HAVE_RL
#include "rl/train.h"
#endif

namespace kforge::cli {

CLI::App* add_train_subcommand(CLI::App& app, TrainArgs& a) {
  auto* cmd = app.add_subcommand(
      "train", "train the learned policy with the CUDA Agent paper's stages (warm-up, collect, RFT, value, PPO)");
  cmd->add_option("--stage", a.stage, "warmup, collect, rft, value, ppo or all (default: all)");
  cmd->add_option("--tasks", a.tasks,
                  "dataset or suite directories, or problem files (default: synthesize the preset's count)");
  cmd->add_option("--eval-tasks", a.eval_tasks,
                  "compare the policies on these suites or problem files (all of them) instead of the held-out "
                  "split, with search and exhaustive search too (issue #5's criterion)");
  cmd->add_option("--replay", a.replay,
                  "evaluation logs of `kforge explore --record`: compare the policies on the --eval-tasks by the "
                  "evaluations recorded there (GPU measurements made elsewhere), on the tasks explored completely");
  cmd->add_option(
      "--correction", a.correction,
      "train (and judge, without --replay) on the cost model corrected by this `kforge costmodel fit --out` "
      "file: the roofline times a factor learned from GPU measurements (--device cpu)");
  cmd->add_option("--out", a.out, "the run directory: checkpoints, trajectories, metrics.jsonl")->required();
  cmd->add_option("--preset", a.preset, "ci (minutes, on a CPU) or full (the paper's sizes)")
      ->check(CLI::IsMember({"ci", "full"}));
  add_protocol_option(cmd, a.protocol);
  cmd->add_option("--device", a.device,
                  "how episodes are judged: cpu (cost model, predicted; the default), cuda (GPU harness: every "
                  "candidate built, verified and timed; slow) or auto (cuda where there is a GPU)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--seed", a.seed, "the seed every random choice comes from");
  cmd->add_option("--ablation", a.ablation,
                  "the paper's ablations: none (the full recipe), no-rft, no-value-pretraining, continuous-reward "
                  "(training rewards are the speed-up over torch.compile); held-out scores stay milestone rewards")
      ->check(CLI::IsMember({"none", "no-rft", "no-value-pretraining", "continuous-reward"}));
  cmd->add_flag("--resume", a.resume, "continue the stages' checkpoints in --out");
  cmd->add_flag("--force", a.force, "redo the stages even if --out holds their results");
  cmd->add_option("--json", a.json_out, "also write the report (comparison and stage metrics) to this file");
  return cmd;
}

int run_train(const TrainArgs& a) {
#ifndef KFORGE_HAVE_RL
  std::fprintf(stderr,
               "kforge train: error: this kforge was built without libtorch; install it (apt-get install "
               "libtorch-dev, or scripts/setup.sh) and build again\n");
  return kExitEnvironment;
#else
  rl::TrainOptions o;
  o.stage = a.stage;
  o.tasks = a.tasks;
  o.eval_tasks = a.eval_tasks;
  o.replay = a.replay;
  o.correction = a.correction;
  o.out = a.out;
  o.preset = a.preset;
  o.protocol = a.protocol;
  o.device = a.device;
  o.ablation = a.ablation;
  o.seed = a.seed;
  o.resume = a.resume;
  o.force = a.force;
  o.progress = [](const std::string& line) { std::fprintf(stderr, "kforge train: %s\n", line.c_str()); };
  auto result = rl::run_training(o);
  if (!result.is_ok()) {
    return report_error(result.status(), "train");
  }
  if (!a.json_out.empty()) {
    Status w = write_file(a.json_out, result->report.dump(2) + "\n");
    if (!w.is_ok()) {
      std::fprintf(stderr, "kforge train: error: %s\n", w.message().c_str());
      return kExitEnvironment;
    }
  }
  if (!result->table.empty()) {
    std::cout << result->table;
  } else {
    std::cout << "stage " << a.stage << " done in " << a.out << ", episodes judged by the "
              << result->report["evaluator"].get<std::string>() << " (metrics.jsonl has a line per iteration)\n";
  }
  return kExitOk;
#endif
}

}  // namespace kforge::cli
