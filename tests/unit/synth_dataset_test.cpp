// The dataset directory: what --out may be, the journal across an interruption, finalization, and
// the record's JSON (filter stages keep their order through a resume).
#include <gtest/gtest.h>

#include <fstream>

#include "base/files.h"
#include "synth/dataset.h"
#include "test_util.h"

namespace kforge::synth {
namespace {

namespace fs = std::filesystem;

CandidateRecord record(int64_t index, bool accepted) {
  CandidateRecord r;
  r.candidate = index;
  r.task_seed = 0xabcdef0123456789ULL + static_cast<uint64_t>(index);
  r.ops = {"torch.nn.Linear", "torch.nn.ReLU"};
  r.data_source = "torch#2";
  r.title = "Linear_ReLU";
  r.pass(Stage::kCompose);
  r.pass(Stage::kSpineImport, {{"kernels", 2}});
  if (accepted) {
    r.pass(Stage::kContamination, {{"nearest_benchmark", "level1/x.py"}, {"similarity", 0.5}});
    r.accepted = true;
    r.file = "tasks/" + std::to_string(index) + "_Linear_ReLU.py";
    r.code = "# task " + std::to_string(index) + "\n";
  } else {
    r.fail(Stage::kEager, "RuntimeError: boom");
  }
  return r;
}

TEST(SynthRecord, JsonRoundTripKeepsStageOrder) {
  CandidateRecord r = record(7, true);
  auto back = record_from_json(OrderedJson::parse(record_to_json(r).dump()));
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(record_to_json(back.value()).dump(), record_to_json(r).dump());
  std::vector<std::string> order;
  for (auto& [k, v] : back->filters.items()) order.push_back(k);
  EXPECT_EQ(order, (std::vector<std::string>{"compose", "spine_import", "contamination"}));
  OrderedJson idx = index_entry(r, 1);
  auto it = idx.begin();
  EXPECT_EQ(it.key(), "ops");
  EXPECT_EQ((++it).key(), "data_source");
  EXPECT_EQ((++it).key(), "code");
}

TEST(SynthRecord, FailureNamesTheStage) {
  CandidateRecord r = record(3, false);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.rejected_at, "eager");
  EXPECT_EQ(r.filters["eager"]["message"], "RuntimeError: boom");
}

TEST(SynthDataset, RefusesForeignFilesAndNeedsResume) {
  fs::path dir = kforge::testing::temp_dir("synth-ds-refuse");
  std::ofstream(dir / "notes.txt") << "mine";
  auto foreign = DatasetDir::open(dir, {}, false);
  ASSERT_FALSE(foreign.is_ok());
  EXPECT_NE(foreign.status().message().find("did not write"), std::string::npos);
  EXPECT_FALSE(DatasetDir::open(dir, {}, true).is_ok());

  fs::path ds = dir / "ds";
  { ASSERT_TRUE(DatasetDir::open(ds, {.seed = 4}, false).is_ok()); }
  auto again = DatasetDir::open(ds, {.seed = 4}, false);
  ASSERT_FALSE(again.is_ok());
  EXPECT_NE(again.status().message().find("--resume"), std::string::npos);
  auto other_seed = DatasetDir::open(ds, {.seed = 5}, true);
  ASSERT_FALSE(other_seed.is_ok());
  EXPECT_NE(other_seed.status().message().find("--seed 4"), std::string::npos);
  EXPECT_TRUE(DatasetDir::open(ds, {.seed = 4}, true).is_ok());
}

TEST(SynthDataset, UnwritableOutIsAUserError) {
  fs::path dir = kforge::testing::temp_dir("synth-ds-unwritable");
  std::ofstream(dir / "file") << "x";
  auto d = DatasetDir::open(dir / "file" / "ds", {}, false);
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kInvalidArgument);
}

TEST(SynthDataset, JournalSurvivesAnInterruption) {
  fs::path dir = kforge::testing::temp_dir("synth-ds-journal") / "ds";
  {
    auto d = DatasetDir::open(dir, {}, false);
    ASSERT_TRUE(d.is_ok());
    for (int i : {0, 1, 3}) ASSERT_TRUE(d->append(record(i, i != 1)).is_ok());
  }
  {  // a torn last line, and a task file lost
    std::ofstream(dir / "journal.jsonl", std::ios::app) << "{\"candidate\": 4, \"task";
    fs::remove(dir / "tasks" / "3_Linear_ReLU.py");
  }
  auto d = DatasetDir::open(dir, {}, true);
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  auto done = d->load_finished();
  ASSERT_TRUE(done.is_ok()) << done.status().message();
  EXPECT_EQ(done->size(), 3u);
  EXPECT_TRUE(done->at(3).accepted);
  EXPECT_EQ(read_file(dir / "tasks" / "3_Linear_ReLU.py").value(), "# task 3\n");

  std::vector<CandidateRecord> kept = {done->at(0), done->at(1)};
  ASSERT_TRUE(d->finalize(kept, 1, {{"report", true}}, "table\n").is_ok());
  EXPECT_FALSE(fs::exists(dir / "journal.jsonl"));
  EXPECT_FALSE(fs::exists(dir / "tasks" / "3_Linear_ReLU.py"));  // beyond the kept candidates
  EXPECT_TRUE(fs::exists(dir / "tasks" / "0_Linear_ReLU.py"));
  std::string index = read_file(dir / "index.jsonl").value();
  EXPECT_EQ(std::count(index.begin(), index.end(), '\n'), 1);
  std::string candidates = read_file(dir / "candidates.jsonl").value();
  EXPECT_EQ(std::count(candidates.begin(), candidates.end(), '\n'), 2);
  EXPECT_EQ(candidates.find("\"code\""), std::string::npos);
}

}  // namespace
}  // namespace kforge::synth
