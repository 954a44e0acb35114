"""What RL trainers read, from trajectories:

- `openai-messages`: one JSON line per episode, {"messages": [...], "tools": [...], "reward": R, "meta": {...}}
  (the multi-turn chat format of veRL's multi-turn SFT/RL datasets, OpenRLHF's `--input_key messages`
  and SkyRL's chat datasets: OpenAI roles, assistant `tool_calls`, `tool` messages with `tool_call_id`).
- rejection fine-tuning filters (the paper's): keep episodes with reward > 0; drop those with invalid tool
  calls, and those with redundant loops (the same tool call, same arguments, repeated `loop_repeats` times
  in a row with nothing changed between them). `rft_filter` returns the kept episodes and the reasons."""
import json

from . import trajectory


def episode(path):
    ev = trajectory.load(path)
    header = next((e for e in ev if e["type"] == "header"), {})
    end = trajectory.episode_summary(ev)
    return {"path": path, "events": ev, "header": header, "end": end}


def to_openai_messages(ep):
    msgs = []
    for m in trajectory.full_messages_of(ep["events"]):
        m = {k: v for k, v in m.items() if v is not None or k == "content"}
        if m.get("role") == "assistant" and m.get("content") is None:
            m["content"] = ""
        msgs.append(m)
    end = ep["end"] or {}
    return {"messages": msgs, "tools": ep["header"].get("tools", []), "reward": end.get("reward"),
            "meta": {"problem": ep["header"].get("problem_name"), "model": ep["header"].get("model"),
                     "protocol": ep["header"].get("protocol"), "turns": end.get("turns"),
                     "stop_reason": end.get("stop_reason"), "scripted_harness": ep["header"].get("scripted_harness"),
                     "source": ep["path"]}}


def redundant_loop(ep, loop_repeats=3):
    """The longest run of identical consecutive tool calls (name and arguments), if >= loop_repeats."""
    run, longest, prev = 0, 0, None
    for m in trajectory.full_messages_of(ep["events"]):
        for tc in m.get("tool_calls") or []:
            key = (tc["function"]["name"], tc["function"]["arguments"])
            run = run + 1 if key == prev else 1
            prev = key
            longest = max(longest, run)
    return longest if longest >= loop_repeats else 0


def invalid_calls(ep):
    return sum(1 for e in ep["events"] if e["type"] == "message" and (e.get("tool") or {}).get("invalid"))


def rft_filter(eps, loop_repeats=3):
    kept, dropped = [], []
    for ep in eps:
        end = ep["end"]
        if end is None:
            dropped.append((ep, "unfinished"))
        elif (end.get("reward") or -1) <= 0:
            dropped.append((ep, "reward %s <= 0" % end.get("reward")))
        elif invalid_calls(ep):
            dropped.append((ep, "%d invalid tool calls" % invalid_calls(ep)))
        elif redundant_loop(ep, loop_repeats):
            dropped.append((ep, "redundant loop (%d identical calls in a row)" % redundant_loop(ep, loop_repeats)))
        else:
            kept.append(ep)
    return kept, dropped


def write_jsonl(rows, path):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
