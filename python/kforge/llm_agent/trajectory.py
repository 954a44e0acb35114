"""Trajectory records: JSON lines, one event per line, each written whole, flushed and fsync'ed, so a
run killed at any point (kill -9) leaves a file whose complete lines are a valid prefix; `load` drops a
torn last line, and the loop resumes from what the lines say. trajectory.schema.json is the schema
(versioned by SCHEMA_NAME); docs/agent-llm.md describes every event.

Events: header, message (every message of the conversation, in order, with the LLM call's timing, usage,
token ids and log-probs when the server returned them, and the tool's meta for tool messages), retry,
compaction (the context after context management), evaluation, best, episode_end."""
import json
import os
import time

from . import SCHEMA_NAME


class TrajectoryWriter:
    def __init__(self, path, seq=0):
        self.path = path
        self.seq = seq
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.f = open(path, "a")

    def write(self, type_, **fields):
        ev = {"schema": SCHEMA_NAME, "type": type_, "seq": self.seq, "time": round(time.time(), 3)}
        ev.update(fields)
        line = json.dumps(ev, ensure_ascii=False, separators=(",", ":"))
        self.f.write(line + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())
        self.seq += 1
        return ev

    def close(self):
        self.f.close()


def load(path, repair=False):
    """The events of a trajectory file; a torn last line (a killed writer) is dropped, and with `repair`
    cut from the file so that appending goes on from a clean line."""
    events, good_bytes = [], 0
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        line = data[pos:nl]
        try:
            events.append(json.loads(line))
        except ValueError:
            break
        pos = nl + 1
        good_bytes = pos
    if repair and good_bytes < len(data):
        with open(path, "r+b") as f:
            f.truncate(good_bytes)
    return events


def episode_summary(events):
    """The episode_end event, or None for a run that has not ended."""
    ends = [e for e in events if e.get("type") == "episode_end"]
    return ends[-1] if ends else None


def messages_of(events):
    """The conversation as the model last saw it: the last compaction's context, then later messages."""
    msgs = []
    for e in events:
        if e["type"] == "compaction":
            msgs = [dict(m) for m in e["context"]]
        elif e["type"] == "message":
            msgs.append(dict(e["message"]))
    return msgs


def full_messages_of(events):
    """Every message of the episode in order (compactions ignored): what the trainers' converters use."""
    return [dict(e["message"]) for e in events if e["type"] == "message"]
