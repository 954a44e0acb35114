#!/usr/bin/env bash
# Issue #4's ablation table: for each skill of the catalogue, on how many problems the default
# planner applies it, and the geomean effect of switching it off (`kforge bench --disable-skill`):
# t(without the skill) / t(with every skill) over the problems it applies to (> 1: the skill helps).
# On a machine without a GPU the times are the cost model's (PREDICTED, and the table says so); with
# --device cuda they are measured (each variant is a whole bench run: mind the device time).
# Usage: scripts/skill_ablation.sh SUITE OUT_DIR [kforge bench options, e.g. --protocol cuda-agent --device cpu]
# Writes OUT_DIR/all/, OUT_DIR/no-<skill>/ (bench runs) and OUT_DIR/skill-ablation.json.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: scripts/skill_ablation.sh SUITE OUT_DIR [kforge bench options]" >&2; exit 2; }
suite=$1
out=$2
shift 2
kforge=${KFORGE_BIN:-$(dirname "$0")/../build/kforge}
mkdir -p "$out"
skills=$("$kforge" skills --names 2>/dev/null || true)
[ -n "$skills" ] || { echo "skill_ablation: '$kforge skills --names' listed no skills" >&2; exit 3; }
echo "== all skills" >&2
"$kforge" bench --suite "$suite" --out "$out/all" --json "$out/all.json" --force "$@" >/dev/null
for skill in $skills; do
  echo "== without $skill" >&2
  "$kforge" bench --suite "$suite" --out "$out/no-$skill" --json "$out/no-$skill.json" --disable-skill "$skill" \
    --force "$@" >/dev/null
done
python3 - "$out" $skills <<'PY'
import json, math, os, sys
out, skills = sys.argv[1], sys.argv[2:]
full = json.load(open(os.path.join(out, "all.json")))
def times(rep):
    # Measured candidate times on a GPU; the cost model's predictions otherwise (correct is then unknown).
    key = "t_predicted_ms" if rep.get("predicted") else "t_candidate_ms"
    return {(p["level"], p["problem"]): p.get(key) for p in rep["problems"]
            if rep.get("predicted") or p.get("correct")}
def applied(p):
    path = os.path.join(p.get("out_dir") or "", "schedule.json")
    try:
        return [a.split(":")[0] for a in json.load(open(path)).get("applied", [])]
    except (OSError, ValueError):
        return []
uses = {(p["level"], p["problem"]): set(applied(p)) for p in full["problems"]}
t_all = times(full)
rows = []
for s in skills:
    t_off = times(json.load(open(os.path.join(out, "no-%s.json" % s))))
    keys = [k for k, u in uses.items() if s in u and t_all.get(k) and t_off.get(k)]
    logs = [math.log(t_off[k] / t_all[k]) for k in keys]
    rows.append({"skill": s, "applies_to": sum(1 for u in uses.values() if s in u),
                 "geomean_slowdown_without": math.exp(sum(logs) / len(logs)) if logs else None})
report = {"predicted": bool(full.get("predicted")), "device": full.get("device"), "protocol": full.get("protocol"),
          "commit": full.get("commit"), "date": full.get("date"), "problems": len(full["problems"]), "skills": rows}
json.dump(report, open(os.path.join(out, "skill-ablation.json"), "w"), indent=1)
kind = "PREDICTED by the cost model" if report["predicted"] else "measured on " + str(report["device"])
print("skill ablation, %s, protocol %s, %d problems (%s)" % (kind, report["protocol"], report["problems"], report["commit"]))
print("%-22s %10s %28s" % ("skill", "applies to", "t without / t with (geomean)"))
for r in rows:
    g = "-" if r["geomean_slowdown_without"] is None else "%.3fx" % r["geomean_slowdown_without"]
    print("%-22s %10d %28s" % (r["skill"], r["applies_to"], g))
PY
