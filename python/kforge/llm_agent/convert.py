"""What RL trainers read, from trajectories:

- `openai-messages`: one row per episode, {"messages": [...], "tools": [...], "reward": R, "meta": {...}}:
  OpenAI roles, assistant `tool_calls` (arguments: the JSON string the model wrote), `tool` messages with
  `tool_call_id`. Written as JSON lines (OpenRLHF's SFT dataset: `--data.input_key messages
  --data.apply_chat_template --data.multiturn`), or as Parquet when the output ends in .parquet (veRL's
  MultiTurnSFTDataset reads Parquet only: `messages` and `tools` columns). tests/llm/test_trainer_loaders.py
  loads both with those trainers' own dataset classes.
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
    """Every message of the episode up to the model's last turn. The tool results after it (an episode cut
    by a budget ends on them) are left out: no assistant turn follows them, so they teach nothing, and a
    loader that takes the last message for the response (OpenRLHF's multi-turn SFT) would make them one.
    meta.trailing_dropped counts them."""
    msgs = []
    for m in trajectory.full_messages_of(ep["events"]):
        m = {k: v for k, v in m.items() if v is not None or k == "content"}
        if m.get("role") == "assistant" and m.get("content") is None:
            m["content"] = ""
        msgs.append(m)
    last = max((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), default=len(msgs) - 1)
    msgs, trailing = msgs[:last + 1], len(msgs) - last - 1
    end = ep["end"] or {}
    return {"messages": msgs, "tools": ep["header"].get("tools", []), "reward": end.get("reward"),
            "meta": {"problem": ep["header"].get("problem_name"), "model": ep["header"].get("model"),
                     "protocol": ep["header"].get("protocol"), "turns": end.get("turns"),
                     "stop_reason": end.get("stop_reason"), "scripted_harness": ep["header"].get("scripted_harness"),
                     "trailing_dropped": trailing, "source": ep["path"]}}


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


class MissingDependency(Exception):
    pass


def write_parquet(rows, path):
    """One row per episode, the columns of write_jsonl's lines (pyarrow infers the nested types). pyarrow is
    not a kforge requirement: the trainers that read Parquet (veRL) bring it."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependency("writing Parquet needs pyarrow (pip install pyarrow; veRL installs it), "
                                "or write JSON lines (-o FILE.jsonl)")
    pq.write_table(pa.Table.from_pylist(rows), path)


def write_rows(rows, path):
    """Parquet when the path ends in .parquet, else JSON lines."""
    if str(path).lower().endswith(".parquet"):
        write_parquet(rows, path)
    else:
        write_jsonl(rows, path)
