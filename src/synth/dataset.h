// The dataset directory of `kforge synth`:
//   synth.json        what made it (seed, max_ops, --against): the marker that kforge wrote it
//   tasks/*.py        the accepted tasks, KernelBench format (a suite for `kforge bench --suite`)
//   journal.jsonl     while running: one line per finished candidate, in finishing order (resume reads it)
//   index.jsonl       accepted tasks, CUDA-Agent-Ops-6K's columns plus provenance, in candidate order
//   candidates.jsonl  every candidate up to the last one needed, with each filter stage's result
//   report.json, report.txt
// Everything but the journal depends only on the arguments: same seed, same bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "synth/record.h"

namespace kforge::synth {

struct DatasetManifest {
  uint64_t seed = 1;
  int max_ops = 5;
  std::vector<std::string> against;  // absolute, normalized
};

class DatasetDir {
 public:
  // A fresh directory (missing or empty), or with `resume` one this manifest made. Anything else
  // (files kforge did not write, a dataset of other arguments, a dataset without --resume, a
  // directory that cannot be written) is an invalid_argument that says what to do.
  static StatusOr<DatasetDir> open(const std::filesystem::path& dir, const DatasetManifest& manifest, bool resume);

  DatasetDir(DatasetDir&& other) noexcept : dir_(std::move(other.dir_)), journal_fd_(other.journal_fd_) {
    other.journal_fd_ = -1;
  }
  DatasetDir& operator=(DatasetDir&&) = delete;
  DatasetDir(const DatasetDir&) = delete;
  ~DatasetDir();

  const std::filesystem::path& path() const { return dir_; }

  // Candidates finished by earlier runs (journal and candidates.jsonl), by index; a torn last line
  // of the journal is ignored. Accepted tasks whose file is missing or differs are written again.
  StatusOr<std::map<int64_t, CandidateRecord>> load_finished();

  // The task file (accepted candidates) then the journal line. Not thread-safe: callers serialize.
  Status append(const CandidateRecord& r);

  // Writes index.jsonl, candidates.jsonl and the report for `kept` (in candidate order), removes task
  // files of candidates not kept and the journal.
  Status finalize(const std::vector<CandidateRecord>& kept, uint64_t run_seed, const OrderedJson& report,
                  const std::string& report_text);

 private:
  explicit DatasetDir(std::filesystem::path dir) : dir_(std::move(dir)) {}
  Status open_journal();

  std::filesystem::path dir_;
  int journal_fd_ = -1;
};

}  // namespace kforge::synth
