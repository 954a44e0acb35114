// Skills: the only way a schedule changes. Each is a named, legality-checked, pure transformation
// `Schedule apply(const Graph&, const Schedule&, const Site&)`, asked first where it applies
// (`sites`), one per file pair (fuse_elementwise.{h,cpp}, ...). The agent's action space is the set
// of sites of all skills, plus stop; the default planner applies them in a documented order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "kernels/forms.h"
#include "schedule/schedule.h"

namespace kforge::skills {

using kernels::has_pointwise_prologue;

// Where a skill applies: the kernels it acts on (indices into Schedule::kernels) and parameters.
struct Site {
  std::vector<int> kernels;
  std::map<std::string, int64_t> params;
  std::string what;  // for people: "fuse k3_relu into k4_add"
};

struct Skill {
  std::string_view name;     // "fuse_elementwise"
  std::string_view summary;  // the catalogue line: what it does, when it applies, what it costs
  // Every site where the skill is legal now, in a stable order.
  std::vector<Site> (*sites)(const ir::Graph& g, const schedule::Schedule& s);
  // The transformed schedule; checks legality again and refuses an illegal site with a Status.
  StatusOr<schedule::Schedule> (*apply)(const ir::Graph& g, const schedule::Schedule& s, const Site& site);
};

// A generated kernel of strategy "elementwise" whose nodes are all pointwise (ir::is_pointwise): the
// chain that fusions, prologues and epilogues move.
bool is_pointwise_chain(const ir::Graph& g, const schedule::Kernel& k);

// A kernel whose nodes a generated reader (an elementwise chain, a reduction's, scan's or loss's prologue)
// can take in front of its own: a pointwise chain, a kernel of views alone (a gather, or a reshape alias), or
// an elementwise chain that already reads through views (kernels::reads_through_views). Whether the joined
// nodes still compose is the caller's check (joined_reads_through_views).
bool joins_reader(const ir::Graph& g, const schedule::Kernel& k);
// Whether the producer's nodes followed by the consumer's prologue nodes (all but the last when
// `consumer_root_too` is false) read every view in place.
bool joined_reads_through_views(const ir::Graph& g, const schedule::Kernel& producer, const schedule::Kernel& consumer,
                                bool consumer_root_too);

// For the skills that join two kernels (fusions, prologues, epilogues): every {producer, consumer}
// pair, producer first, that `illegal` accepts (it returns "" for a legal pair), each described by
// `what(producer name, consumer name)`, in a stable order (consumer, then producer). Only pairs where
// a node of the consumer reads the producer's result (its root node's output) are asked, so a rule
// must reject every other pair (each one does: the consumer must read what it joins).
using PairRule = std::string (*)(const ir::Graph&, const schedule::Schedule&, int producer, int consumer);
std::vector<Site> pair_sites(const ir::Graph& g, const schedule::Schedule& s, PairRule illegal,
                             std::string (*what)(const std::string& producer, const std::string& consumer));

// For the skills that change one kernel: every kernel that `illegal` accepts ("" when legal), each
// described by `what(kernel name)`, in the schedule's order.
using KernelRule = std::string (*)(const ir::Graph&, const schedule::Schedule&, const schedule::Kernel&);
std::vector<Site> kernel_sites(const ir::Graph& g, const schedule::Schedule& s, KernelRule illegal,
                               std::string (*what)(const std::string& kernel));
// The kernel index of a one-kernel site, checked again against the schedule and `illegal`; an
// invalid_argument that names `skill` when the site is not one kernel of `s` or is illegal.
StatusOr<size_t> site_kernel(const ir::Graph& g, const schedule::Schedule& s, const Site& site, KernelRule illegal,
                             std::string_view skill);
// The apply of a skill that sets one knob of one kernel: `s` with kernel site_kernel(...)'s knob `knob` set to
// `value`, and "<skill>: <site.what>" appended to `applied`.
StatusOr<schedule::Schedule> set_kernel_knob(const ir::Graph& g, const schedule::Schedule& s, const Site& site,
                                             KernelRule illegal, std::string_view skill, schedule::Knob knob,
                                             int64_t value);

// The index of the kernel that computes `node`, or -1.
int kernel_of(const schedule::Schedule& s, int node);

// True when value v is read by `node` alone and is not a graph output (so it need never be stored
// once `node` computes it in the same kernel).
bool read_only_by(const ir::Graph& g, ir::ValueIndex v, int node);

// Why value v, made by one kernel, cannot stay unstored when `reader` joins that kernel ("" when it can):
// v is a graph output, or a node outside `reader` reads it, or `reader` does not read it. The messages
// name v as `whose` result ("the producer's") and the reader as `reader_name` ("the consumer").
std::string kept_for_reader_alone(const ir::Graph& g, ir::ValueIndex v, const schedule::Kernel& reader,
                                  const std::string& whose, const std::string& reader_name);

// Why the pointwise chain kernel (or a kernel joins_reader accepts) `producer` cannot become the prologue of the
// one-node kernel `consumer` ("" when it can): `consumer_ok` says whether the consumer is of the skill's kind
// (`consumer_kind` describes it); the consumer's node reads the chain's result as its input 0; nothing
// else reads that result and it is not a graph output (it is never stored).
std::string prologue_illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer,
                             bool (*consumer_ok)(const ir::Graph&, const schedule::Kernel&), const char* consumer_kind);

// The producer's nodes moved in front of the consumer's (the consumer keeps its strategy and knobs),
// the producer kernel removed, `applied` recorded. Legality is the caller's: nothing between the two
// may read the producer's result.
schedule::Schedule join_into_consumer(const schedule::Schedule& s, int producer, int consumer,
                                      const std::string& applied);

// The number of skills in the catalogue. skill.cpp checks it against the catalogue at compile time, and the
// agent's action space (agent::kMaxSkills) against it: adding a skill is a compile error until both agree.
inline constexpr int kNumSkills = 19;

// The catalogue, in the default planner's order.
const std::vector<Skill>& all_skills();
const Skill* find_skill(std::string_view name);

}  // namespace kforge::skills
