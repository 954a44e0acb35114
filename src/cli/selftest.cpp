// kforge selftest threats: every threat fixture (tests/threats) against the layer meant to catch it.
// Static fixtures (.py ModelNew files, .cu units) go through the static checks, here on any machine;
// runtime fixtures go through the GPU harness (--gpu) with the static checks off, so that the runtime
// checks are shown to catch them on their own. A control fixture must pass.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "base/files.h"
#include "base/json.h"
#include "base/table.h"
#include "cli/commands.h"
#include "cli/evaluate.h"
#include "sandbox/harness.h"
#include "sandbox/static_check.h"

namespace kforge::cli {

namespace fs = std::filesystem;

namespace {

struct Fixture {
  fs::path path;
  std::string threat;  // what it tries
  std::string layer;   // "static" or "runtime"
  std::string expect;  // the outcome that means caught ("ok" for the control)
};

// The `threat:`, `layer:` and `expect:` header lines ("# " in Python, "// " in CUDA).
Fixture read_fixture(const fs::path& p, const std::string& text) {
  Fixture f;
  f.path = p;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line) && (line.rfind("#", 0) == 0 || line.rfind("//", 0) == 0);) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(line.find_first_not_of("#/ "), colon - line.find_first_not_of("#/ "));
    std::string value = line.substr(line.find_first_not_of(' ', colon + 1));
    if (key == "threat") f.threat = value;
    if (key == "layer") f.layer = value;
    if (key == "expect") f.expect = value;
  }
  return f;
}

struct Verdict {
  std::string status;   // "caught", "MISSED", "skipped"
  std::string outcome;  // what the checks said
  std::string detail;
};

}  // namespace

int run_selftest(const SelftestArgs& a) {
  fs::path dir = a.fixtures;
  if (dir.empty()) {
    auto home = kforge_home();
    if (!home.is_ok()) {
      std::fprintf(stderr, "kforge selftest: error: %s\n", home.status().message().c_str());
      return kExitEnvironment;
    }
    dir = home.value() / "tests/threats";
  }
  const fs::path problem = dir / "problem_relu.py";
  std::error_code ec;
  if (!fs::exists(problem, ec)) {
    std::fprintf(stderr, "kforge selftest: error: no threat fixtures in %s (expected problem_relu.py there)\n",
                 dir.c_str());
    return kExitUserError;
  }
  if (a.gpu) {
    auto device = resolve_device("cuda");
    if (!device.is_ok()) {
      std::fprintf(stderr, "kforge selftest: error: --gpu: %s\n", device.status().message().c_str());
      return kExitUserError;
    }
  }
  std::vector<Fixture> fixtures;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path() == problem || (e.path().extension() != ".py" && e.path().extension() != ".cu")) continue;
    auto text = read_file(e.path());
    if (!text.is_ok()) continue;
    Fixture f = read_fixture(e.path(), text.value());
    if (f.layer.empty() || f.expect.empty()) {
      std::fprintf(stderr, "kforge selftest: error: %s lacks its `layer:` / `expect:` header\n", e.path().c_str());
      return kExitUserError;
    }
    fixtures.push_back(f);
  }
  std::sort(fixtures.begin(), fixtures.end(), [](const Fixture& x, const Fixture& y) { return x.path < y.path; });

  std::unique_ptr<sandbox::HarnessWorker> worker;
  OrderedJson rows = OrderedJson::array();
  int run = 0, caught = 0, skipped = 0;
  for (const auto& f : fixtures) {
    Verdict v;
    if (f.layer == "static" && f.path.extension() == ".cu") {
      auto text = read_file(f.path);
      auto findings = sandbox::check_cuda_source(text.value(), f.path.filename().string());
      v.outcome = findings.empty() ? "ok" : "forbidden";
      v.detail = findings.empty() ? "" : sandbox::describe(findings.front());
    } else if (f.layer == "static") {
      auto findings = sandbox::check_model_new(f.path, problem);
      if (!findings.is_ok()) {
        std::fprintf(stderr, "kforge selftest: error: %s\n", findings.status().message().c_str());
        return kExitEnvironment;
      }
      v.outcome = findings->empty() ? "ok" : "forbidden";
      v.detail = findings->empty() ? "" : sandbox::describe(findings->front());
    } else if (!a.gpu) {
      v.status = "skipped";
      v.detail = "needs a GPU (--gpu)";
    } else {
      if (!worker) worker = std::make_unique<sandbox::HarnessWorker>();
      sandbox::EvalRequest req;
      req.problem = problem;
      req.candidate = f.path;
      req.static_check = false;  // the runtime checks must catch it on their own
      req.timeout_seconds = 60;
      // Timing threats are caught by the profile's integrity flags, not by verification; an honest
      // runtime control is timed too, so that a flag raised on everything shows as a miss.
      const bool timing = f.expect == "escaped_stream" || f.expect == "ok";
      if (timing) {
        req.profile = true;
        req.trials = 5;
        req.timeout_seconds = 300;
      }
      auto r = worker->evaluate(req);
      if (!r.is_ok()) {
        std::fprintf(stderr, "kforge selftest: error: %s\n", r.status().message().c_str());
        return kExitEnvironment;
      }
      v.outcome = sandbox::outcome_name(r->outcome);
      v.detail = r->message.substr(0, 160);
      if (timing && r->outcome == sandbox::Outcome::kOk && sandbox::timing_flags(r.value()).escaped_stream) {
        v.outcome = "escaped_stream";
        char buf[160];
        std::snprintf(buf, sizeof buf, "event time %.3f ms, synchronized host time %.3f ms, %d other streams",
                      1e3 * r->t_candidate.value_or(0), 1e3 * r->t_candidate_wall.value_or(0), r->other_streams);
        v.detail = buf;
      }
    }
    if (v.status.empty()) {
      v.status = v.outcome == f.expect ? "caught" : "MISSED";
      ++run;
      if (v.status == "caught") ++caught;
    } else {
      ++skipped;
    }
    std::string name = f.path.filename().string();
    std::cout << (v.status == "MISSED"   ? "MISSED "
                  : v.status == "caught" ? "caught "
                                         : "skipped")
              << "  " << name << (name.size() < 32 ? std::string(32 - name.size(), ' ') : " ") << f.layer << "  expect "
              << f.expect << ", got " << (v.outcome.empty() ? "-" : v.outcome)
              << (v.detail.empty() ? "" : ": " + v.detail) << "\n";
    OrderedJson row;
    row["fixture"] = name;
    row["threat"] = f.threat;
    row["layer"] = f.layer;
    row["expect"] = f.expect;
    row["outcome"] = v.outcome.empty() ? OrderedJson(nullptr) : OrderedJson(v.outcome);
    row["status"] = v.status;
    row["detail"] = v.detail;
    rows.push_back(row);
  }
  std::cout << "caught " << caught << "/" << run;
  if (skipped) std::cout << " (" << skipped << " runtime fixtures skipped: no --gpu)";
  std::cout << "\n";
  if (!a.json_out.empty()) {
    OrderedJson doc;
    doc["format"] = "kforge.selftest/1";
    doc["caught"] = caught;
    doc["run"] = run;
    doc["skipped"] = skipped;
    doc["fixtures"] = rows;
    if (auto s = write_file(a.json_out, doc.dump(1) + "\n"); !s.is_ok()) {
      std::fprintf(stderr, "kforge selftest: error: %s\n", s.message().c_str());
      return kExitEnvironment;
    }
  }
  return caught == run ? kExitOk : kExitFailedResult;
}

}  // namespace kforge::cli
