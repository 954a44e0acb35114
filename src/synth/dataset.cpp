// DatasetDir: the marker and its checks, the journal, finalization.
#include "synth/dataset.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>

#include "base/files.h"

namespace kforge::synth {

namespace fs = std::filesystem;

namespace {

constexpr const char* kManifest = "synth.json";
constexpr const char* kJournal = "journal.jsonl";
constexpr const char* kCandidates = "candidates.jsonl";
constexpr const char* kFormat = "kforge.synth/1";

OrderedJson manifest_json(const DatasetManifest& m) {
  return {{"format", kFormat},
          {"written_by", "kforge synth: this directory is a dataset kforge wrote; --resume continues it"},
          {"seed", m.seed},
          {"max_ops", m.max_ops},
          {"against", m.against}};
}

Status check_manifest(const fs::path& dir, const DatasetManifest& m) {
  KF_ASSIGN_OR_RETURN(std::string text, read_file(dir / kManifest));
  KF_ASSIGN_OR_RETURN(Json j, parse_json(text, (dir / kManifest).string()));
  auto differs = [&](const std::string& what, const std::string& was, const std::string& now) {
    return invalid_argument("--resume: " + dir.string() + " was made with " + what + " " + was + ", not " + now +
                            "; give the same arguments, or pick another --out");
  };
  if (j.value("format", "") != kFormat)
    return invalid_argument(dir.string() + "/synth.json is not a kforge synth manifest");
  if (j.value("seed", uint64_t{0}) != m.seed)
    return differs("--seed", std::to_string(j.value("seed", uint64_t{0})), std::to_string(m.seed));
  if (j.value("max_ops", 0) != m.max_ops)
    return differs("--max-ops", std::to_string(j.value("max_ops", 0)), std::to_string(m.max_ops));
  std::vector<std::string> against = j.value("against", std::vector<std::string>{});
  if (against != m.against) {
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
      return s.empty() ? std::string("(none)") : s;
    };
    return differs("--against", join(against), join(m.against));
  }
  return Status::ok();
}

// Parses JSON lines; a line that does not parse is skipped only when it is the last one (torn write).
StatusOr<std::vector<CandidateRecord>> read_records(const fs::path& path) {
  std::vector<CandidateRecord> out;
  std::error_code ec;
  if (!fs::exists(path, ec)) return out;
  KF_ASSIGN_OR_RETURN(std::string text, read_file(path));
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  const bool torn_end = !text.empty() && text.back() != '\n';
  for (size_t i = 0; i < lines.size(); ++i) {
    OrderedJson j;
    try {
      j = OrderedJson::parse(lines[i]);
    } catch (const std::exception&) {
      if (i + 1 == lines.size() && torn_end) break;
      return invalid_argument(path.string() + ": line " + std::to_string(i + 1) +
                              " is not JSON; the dataset is damaged (pick another --out)");
    }
    KF_ASSIGN_OR_RETURN(CandidateRecord r, record_from_json(j));
    out.push_back(std::move(r));
  }
  return out;
}

Status write_lines(const fs::path& path, const std::vector<OrderedJson>& rows) {
  std::string text;
  for (const auto& r : rows) text += r.dump() + "\n";
  return write_file(path, text);
}

}  // namespace

StatusOr<DatasetDir> DatasetDir::open(const fs::path& dir, const DatasetManifest& manifest, bool resume) {
  std::error_code ec;
  const std::string shown = dir.string();
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec))
      return invalid_argument("--out " + shown + " exists and is not a directory; pick another --out");
    bool empty = fs::directory_iterator(dir, ec) == fs::directory_iterator();
    if (ec) return invalid_argument("cannot read --out " + shown + ": " + ec.message());
    if (!empty) {
      if (!fs::exists(dir / kManifest, ec)) {
        return invalid_argument("--out " + shown +
                                " already holds files that kforge did not write; pick another --out (a new or empty "
                                "directory)");
      }
      if (!resume) {
        return invalid_argument("--out " + shown +
                                " already holds a kforge synth dataset; pass --resume to continue it, or pick another "
                                "--out");
      }
      KF_RETURN_IF_ERROR(check_manifest(dir, manifest));
    }
  }
  fs::create_directories(dir / "tasks", ec);
  if (ec)
    return invalid_argument("cannot create --out " + shown + ": " + ec.message() + "; pick a directory you can write");
  Status s = write_file(dir / kManifest, manifest_json(manifest).dump(2) + "\n");
  if (!s.is_ok()) return invalid_argument("cannot write into --out " + shown + ": " + s.message());
  DatasetDir d(dir);
  KF_RETURN_IF_ERROR(d.open_journal());
  return d;
}

DatasetDir::~DatasetDir() {
  if (journal_fd_ >= 0) ::close(journal_fd_);
}

Status DatasetDir::open_journal() {
  journal_fd_ = ::open((dir_ / kJournal).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (journal_fd_ < 0)
    return invalid_argument("cannot write into --out " + dir_.string() + ": " + std::strerror(errno));
  return Status::ok();
}

StatusOr<std::map<int64_t, CandidateRecord>> DatasetDir::load_finished() {
  std::map<int64_t, CandidateRecord> done;
  for (const char* file : {kCandidates, kJournal}) {
    KF_ASSIGN_OR_RETURN(auto records, read_records(dir_ / file));
    for (auto& r : records) done[r.candidate] = std::move(r);
  }
  for (auto it = done.begin(); it != done.end();) {
    CandidateRecord& r = it->second;
    if (!r.accepted) {
      ++it;
      continue;
    }
    auto on_disk = read_file(dir_ / r.file);
    if (r.code.empty()) {  // from candidates.jsonl: the task file holds the code
      if (!on_disk.is_ok()) {
        it = done.erase(it);  // lost: evaluated again (the same seed gives the same task)
        continue;
      }
      r.code = on_disk.value();
    } else if (!on_disk.is_ok() || on_disk.value() != r.code) {
      KF_RETURN_IF_ERROR(write_file(dir_ / r.file, r.code));
    }
    ++it;
  }
  return done;
}

Status DatasetDir::append(const CandidateRecord& r) {
  if (r.accepted) KF_RETURN_IF_ERROR(write_file(dir_ / r.file, r.code));
  std::string line = record_to_json(r).dump() + "\n";
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(journal_fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return external_error("cannot append to " + (dir_ / kJournal).string() + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

Status DatasetDir::finalize(const std::vector<CandidateRecord>& kept, uint64_t run_seed, const OrderedJson& report,
                            const std::string& report_text) {
  std::vector<OrderedJson> index;
  std::vector<OrderedJson> candidates;
  std::set<std::string> files;
  for (const auto& r : kept) {
    OrderedJson c = record_to_json(r);
    c.erase("code");
    candidates.push_back(std::move(c));
    if (!r.accepted) continue;
    index.push_back(index_entry(r, run_seed));
    files.insert(fs::path(r.file).filename().string());
  }
  KF_RETURN_IF_ERROR(write_lines(dir_ / kCandidates, candidates));
  KF_RETURN_IF_ERROR(write_lines(dir_ / "index.jsonl", index));
  KF_RETURN_IF_ERROR(write_file(dir_ / "report.json", report.dump(2) + "\n"));
  KF_RETURN_IF_ERROR(write_file(dir_ / "report.txt", report_text));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_ / "tasks", ec)) {
    if (!files.count(e.path().filename().string())) fs::remove(e.path(), ec);
  }
  if (journal_fd_ >= 0) ::close(journal_fd_);
  journal_fd_ = -1;
  fs::remove(dir_ / kJournal, ec);
  return Status::ok();
}

}  // namespace kforge::synth
