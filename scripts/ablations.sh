#!/usr/bin/env bash
# The paper's ablations on our system: the full recipe and each variant of `kforge train --ablation`,
# same preset, tasks and seed, then one table (held-out milestone reward of the learned policy, and
# what the stages showed: PPO's first-iteration explained variance and mean training reward).
# Usage: scripts/ablations.sh OUT_DIR [kforge train options, e.g. --preset ci --tasks DIR --seed 1]
# Writes OUT_DIR/<variant>/ (each a training run) and OUT_DIR/ablations.json.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/ablations.sh OUT_DIR [kforge train options]" >&2; exit 2; }
out=$1
shift
kforge=${KFORGE_BIN:-$(dirname "$0")/../build/kforge}
mkdir -p "$out"
for variant in none no-rft no-value-pretraining continuous-reward; do
  echo "== $variant" >&2
  "$kforge" train --out "$out/$variant" --ablation "$variant" --json "$out/$variant.json" --force "$@" >/dev/null
done
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = []
for v in ("none", "no-rft", "no-value-pretraining", "continuous-reward"):
    rep = json.load(open(os.path.join(out, v + ".json")))
    ppo = [json.loads(l) for l in open(os.path.join(out, v, "metrics.jsonl")) if '"ppo"' in l]
    ppo = [l for l in ppo if l.get("stage") == "ppo"]
    rows.append({"variant": v,
                 "learned_mean_reward": rep["learned"]["mean_reward"],
                 "learned_faster_than_compile": rep["learned"]["faster_than_compile_rate"],
                 "heuristic_mean_reward": rep["heuristic"]["mean_reward"],
                 "random_mean_reward": rep["random"]["mean_reward"],
                 "ppo_first_explained_variance": ppo[0].get("explained_variance") if ppo else None,
                 "ppo_first_training_reward": ppo[0].get("mean_reward") if ppo else None,
                 "held_out_tasks": rep["held_out_tasks"], "predicted": rep["predicted"]})
json.dump({"format": "kforge.ablations/1", "variants": rows}, open(os.path.join(out, "ablations.json"), "w"), indent=2)
print("%-22s %14s %12s %10s %10s %12s" % ("variant", "learned reward", "faster>comp", "heuristic", "random", "ppo EV it0"))
for r in rows:
    print("%-22s %14.3f %11.1f%% %10.3f %10.3f %12.3f" % (r["variant"], r["learned_mean_reward"],
          100 * r["learned_faster_than_compile"], r["heuristic_mean_reward"], r["random_mean_reward"],
          r["ppo_first_explained_variance"] or float("nan")))
print("held-out tasks: %d; rewards are milestone rewards on %s times" % (rows[0]["held_out_tasks"],
      "PREDICTED (cost model)" if rows[0]["predicted"] else "measured"))
PY
