// evaluate_candidate: the stages of record.h in order; the first failure ends the candidate.
#include "synth/candidate.h"

#include <cmath>
#include <cstdio>

#include "ir/graph.h"

namespace kforge::synth {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  return ir::shape_str(s);
}

std::vector<int64_t> full_shape(int64_t batch, const TensorState& t) {
  std::vector<int64_t> s = {batch};
  s.insert(s.end(), t.dims.begin(), t.dims.end());
  return s;
}

double ms(double seconds) {
  return round_significant(seconds * 1e3);
}

// The graph from a worker answer, priced; a message when it did not import.
StatusOr<EagerPrediction> priced(const Json& graph, const std::string& what) {
  if (graph.is_object() && graph.contains("error")) {
    return invalid_argument(graph["error"].is_string() ? graph["error"].get<std::string>() : graph["error"].dump());
  }
  return predict_eager(graph, what);
}

bool stage_ok(const Json& stages, const char* name) {
  return stages.contains(name) && stages[name].value("ok", false);
}

std::string stage_message(const Json& stages, const char* name) {
  if (!stages.contains(name)) return "the worker did not run this stage";
  return stages[name].value("message", "");
}

// Carries a worker stage's values (output shapes, differences) into the record.
OrderedJson worker_detail(const Json& stage) {
  OrderedJson d = OrderedJson::object();
  for (const char* k : {"message", "max_diff", "rel_diff", "output_shapes", "skipped"}) {
    if (stage.contains(k) && !(stage[k].is_string() && stage[k].get<std::string>().empty()))
      d[k] = OrderedJson::parse(stage[k].dump());
  }
  return d;
}

// Stages 3-6 from the worker's answer; false when one failed.
bool record_execution_stages(const Json& stages, const ComposedTask& task, int small_batch, CandidateRecord& r) {
  if (!stage_ok(stages, "eager")) {
    r.fail(Stage::kEager, stage_message(stages, "eager"));
    return false;
  }
  const Json& eager = stages["eager"];
  std::vector<int64_t> want = full_shape(small_batch, task.output);
  if (!eager.contains("output_shapes") || eager["output_shapes"].empty() ||
      eager["output_shapes"][0].get<std::vector<int64_t>>() != want) {
    r.fail(Stage::kEager,
           "torch's output shape differs from the seed library's shape rule " + shape_text(want) + " (a library bug)");
    return false;
  }
  r.pass(Stage::kEager, worker_detail(eager));
  if (!stage_ok(stages, "compile")) {
    r.fail(Stage::kCompile, stage_message(stages, "compile"));
    return false;
  }
  if (stages["compile"].value("skipped", false)) {
    r.skip(Stage::kCompile, stage_message(stages, "compile"));
  } else {
    r.pass(Stage::kCompile);
  }
  if (!stage_ok(stages, "deterministic")) {
    r.fail(Stage::kDeterministic, stage_message(stages, "deterministic"));
    return false;
  }
  for (const auto& op : r.registry_ops) {
    if (op == "dropout") {
      r.fail(Stage::kDeterministic, "the imported graph has a dropout node");
      return false;
    }
  }
  r.pass(Stage::kDeterministic, worker_detail(stages["deterministic"]));
  if (!stage_ok(stages, "distinguishable")) {
    const Json& d = stages.contains("distinguishable") ? stages["distinguishable"] : Json::object();
    OrderedJson detail = worker_detail(d);
    detail.erase("message");
    r.fail(Stage::kDistinguishable, stage_message(stages, "distinguishable"), detail);
    return false;
  }
  r.pass(Stage::kDistinguishable, worker_detail(stages["distinguishable"]));
  return true;
}

std::string request_name(int64_t index) {
  return "c" + std::to_string(index);
}

// Stage 2: the task imported at batch 1 and 2 (meta tensors), re-inferred by the C++ IR and priced;
// empty after a failure (recorded in r).
std::vector<EagerPrediction> import_probes(const SynthContext& ctx, const ComposedTask& task, int64_t index,
                                           const std::string& name, SynthWorker& worker, CandidateRecord& r) {
  auto traced = worker.request(
      {{"cmd", "trace"}, {"name", request_name(index)}, {"sources", {task.source.render(1), task.source.render(2)}}},
      ctx.request_timeout_seconds);
  if (!traced.is_ok()) {
    r.fail(Stage::kSpineImport, traced.status().message());
    return {};
  }
  std::vector<EagerPrediction> probes;
  for (int i = 0; i < 2; ++i) {
    auto p = priced((*traced)["graphs"][static_cast<size_t>(i)], name);
    if (!p.is_ok()) {
      r.fail(Stage::kSpineImport, p.status().message());
      return {};
    }
    std::vector<int64_t> want = full_shape(i + 1, task.output);
    if (p->output_shape != want) {
      r.fail(Stage::kSpineImport, "the imported output shape " + shape_text(p->output_shape) +
                                      " differs from the seed library's shape rule " + shape_text(want));
      return {};
    }
    probes.push_back(std::move(p).value());
  }
  r.registry_ops = probes[1].registry_ops;
  r.pass(Stage::kSpineImport, {{"kernels", probes[1].kernels}});
  return probes;
}

// Stage 7: the full-size graph's predicted time inside the window (one secant step when it missed);
// `batch` ends as the batch the task is written with.
bool check_runtime_window(const SynthContext& ctx, const ComposedTask& task, int64_t index, const std::string& name,
                          const std::vector<EagerPrediction>& probes, double target, int64_t limit,
                          StatusOr<EagerPrediction> full, int64_t& batch, SynthWorker& worker, CandidateRecord& r) {
  if (full.is_ok() && !ctx.window.contains(full->seconds) && limit >= 2) {
    int64_t again = batch_for_target(2, probes[1].seconds, batch, full->seconds, target, limit);
    if (again != batch) {
      auto retraced =
          worker.request({{"cmd", "trace"}, {"name", request_name(index)}, {"sources", {task.source.render(again)}}},
                         ctx.request_timeout_seconds);
      if (retraced.is_ok()) {
        batch = again;
        full = priced((*retraced)["graphs"][0], name);
      }
    }
  }
  if (!full.is_ok()) {
    r.fail(Stage::kRuntimeWindow, "the full-size task does not import: " + full.status().message());
    return false;
  }
  r.batch_size = batch;
  r.predicted_eager_ms = ms(full->seconds);  // rounded: the record holds what the dataset shows
  OrderedJson window = {{"predicted_ms", r.predicted_eager_ms},
                        {"batch_size", batch},
                        {"target_ms", ms(target)},
                        {"predicted", true},
                        {"device", full->device}};
  if (limit < 2) {
    r.fail(Stage::kRuntimeWindow, "even batch 2 exceeds the memory caps", window);
    return false;
  }
  if (!ctx.window.contains(full->seconds)) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "predicted eager time %.3g ms at batch %lld is outside %g-%g ms", ms(full->seconds),
                  static_cast<long long>(batch), ms(ctx.window.min_seconds), ms(ctx.window.max_seconds));
    r.fail(Stage::kRuntimeWindow, msg, window);
    return false;
  }
  r.pass(Stage::kRuntimeWindow, window);
  return true;
}

// Stage 8: the most similar benchmark problem, at most 0.9.
bool check_contamination(const SynthContext& ctx, const Json& features, CandidateRecord& r) {
  if (ctx.benchmarks.empty()) {
    r.skip(Stage::kContamination, "no --against directories");
    return true;
  }
  auto fp = fingerprint_from_json(features);
  if (!fp.is_ok()) {
    r.fail(Stage::kContamination, fp.status().message());
    return false;
  }
  Nearest near = nearest_problem(fp.value(), ctx.benchmarks);
  r.nearest = near.name;
  r.similarity = near.similarity;
  OrderedJson detail = {{"nearest_benchmark", near.name}, {"similarity", round_significant(near.similarity)}};
  if (near.similarity > kContaminationThreshold) {
    r.fail(Stage::kContamination, "AST similarity above 0.9 to a benchmark problem", detail);
    return false;
  }
  r.pass(Stage::kContamination, detail);
  return true;
}

}  // namespace

uint64_t task_seed(uint64_t run_seed, int64_t index) {
  return mix_seed(run_seed, static_cast<uint64_t>(index));
}

std::string task_file_name(int64_t index, const std::string& title) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06lld_", static_cast<long long>(index));
  return buf + title + ".py";
}

CandidateRecord evaluate_candidate(const SynthContext& ctx, int64_t index, SynthWorker& worker) {
  CandidateRecord r;
  r.candidate = index;
  r.task_seed = task_seed(ctx.seed, index);
  Rng rng(r.task_seed);

  auto composed = compose_task(SeedLibrary::get(), rng, ctx.compose);
  if (!composed) {
    r.fail(Stage::kCompose, "no shape-compatible composition found");
    return r;
  }
  const ComposedTask& task = *composed;
  const double target = rng.log_uniform(ctx.min_target_seconds, ctx.max_target_seconds);
  r.ops = task.op_names();
  r.data_source = task.data_source();
  r.title = task.short_title();
  r.pass(Stage::kCompose, {{"sample_flops", std::round(task.sample_flops)}});
  const std::string name = task_file_name(index, r.title);

  std::vector<EagerPrediction> probes = import_probes(ctx, task, index, name, worker, r);
  if (probes.empty()) return r;

  // The execution filters run on the scaled-down task; the same request imports the full-size one
  // and fingerprints it.
  const int64_t limit = max_batch(probes[0], probes[1], ctx.window);
  int64_t batch = batch_for_target(1, probes[0].seconds, 2, probes[1].seconds, target, limit);
  auto checked = worker.request({{"cmd", "check"},
                                 {"name", request_name(index)},
                                 {"seed", r.task_seed & 0x7fffffffffffffffULL},
                                 {"small", task.source.render(ctx.small_batch)},
                                 {"full", task.source.render(batch)}},
                                ctx.request_timeout_seconds);
  if (!checked.is_ok()) {
    r.fail(Stage::kEager, checked.status().message());
    return r;
  }
  if (!record_execution_stages((*checked)["stages"], task, ctx.small_batch, r)) return r;
  if (!check_runtime_window(ctx, task, index, name, probes, target, limit, priced((*checked)["graph"], name), batch,
                            worker, r)) {
    return r;
  }
  if (!check_contamination(ctx, (*checked)["features"], r)) return r;
  r.accepted = true;
  r.file = "tasks/" + name;
  r.code = task.source.render(batch);
  return r;
}

}  // namespace kforge::synth
