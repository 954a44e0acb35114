"""The ReAct loop of one episode: the model answers with tool calls, the tools run, their results go back,
until the model answers without a tool call, or a budget (turns, tokens, time) runs out, or it tampers
with the protected files. Context management keeps the conversation under the context budget; the best
correct candidate is kept (OUT/best/) and its milestone reward is the episode's."""
import hashlib
import json
import os
import shutil
import time

from . import trajectory
from .client import LLMError
from .tools import TOOL_SPECS, Tools, clip
from .workspace import Workspace, create as create_workspace

SYSTEM_PROMPT = """You are a CUDA kernel engineer. You make PyTorch models faster by writing your own CUDA
kernels, in the workspace you are given, with the tools you are given. Work in small verified steps: compile,
verify, profile, improve. Follow SKILL.md exactly: candidates that break its rules score -1."""

TURNS = {"train": 150, "eval": 200}


class Budgets:
    def __init__(self, max_turns=150, context_tokens=131072, max_response_tokens=8192, max_total_tokens=None,
                 time_limit_s=None, compaction_threshold=0.8):
        self.max_turns = max_turns
        self.context_tokens = context_tokens
        self.max_response_tokens = max_response_tokens
        self.max_total_tokens = max_total_tokens
        self.time_limit_s = time_limit_s
        self.compaction_threshold = compaction_threshold

    def to_json(self):
        return dict(self.__dict__)


def _chars(messages):
    return len(json.dumps(messages, ensure_ascii=False))


def better(a, b):
    """Is evaluation `a` a better candidate than `b` (None: no candidate yet)? Higher reward, then faster."""
    if b is None:
        return True
    if a["reward"] != b["reward"]:
        return a["reward"] > b["reward"]
    ta, tb = a.get("t_candidate"), b.get("t_candidate")
    return ta is not None and (tb is None or ta < tb)


def compact(messages, keep_last=8, clip_chars=4000):
    """Context management: the system prompt and the task stay; older turns become a summary of the tool
    calls they made (the workspace holds their effects); recent tool outputs are clipped."""
    if len(messages) <= 2 + keep_last:
        keep_last = max(1, len(messages) - 2 - 1)
    head, rest = messages[:2], messages[2:]
    cut = max(0, len(rest) - keep_last)
    while cut < len(rest) and rest[cut].get("role") == "tool":
        cut -= 1  # never start the tail with a tool result whose call was dropped
        if cut <= 0:
            cut = 0
            break
    middle, tail = rest[:cut], rest[cut:]
    lines = []
    for m in middle:
        for tc in m.get("tool_calls") or []:
            f = tc.get("function", {})
            lines.append("- %s(%s)" % (f.get("name"), clip(str(f.get("arguments", "")), 160)))
        if m.get("role") == "tool":
            first = (m.get("content") or "").strip().splitlines()[:1]
            if first:
                lines.append("    -> " + clip(first[0], 200))
    note = {"role": "user", "content": "[context management: %d earlier messages were removed to stay within the "
            "context budget. The workspace files hold their effects; re-read files as needed. Tool calls made "
            "then:\n%s]" % (len(middle), "\n".join(lines[-200:]) or "(none)")}
    out = list(head) + ([note] if middle else [])
    for m in tail:
        m = dict(m)
        if isinstance(m.get("content"), str) and len(m["content"]) > clip_chars:
            m["content"] = clip(m["content"], clip_chars)
        out.append(m)
    return out


class Episode:
    def __init__(self, problem, out_dir, client, harness, budgets, protocol="cuda-agent", device="auto",
                 seed=0, temperature=None, logprobs=False, start_from_kforge=False, use_bwrap=True, log=None):
        self.problem = os.path.abspath(problem)
        self.out = os.path.abspath(out_dir)
        self.client = client
        self.harness = harness
        self.b = budgets
        self.protocol = protocol
        self.device = device
        self.seed = seed
        self.temperature = temperature
        self.logprobs = logprobs
        self.start_from_kforge = start_from_kforge
        self.use_bwrap = use_bwrap
        self.log = log or (lambda s: None)
        self.path = os.path.join(self.out, "trajectory.jsonl")

    # --- state
    def _fresh_state(self):
        self.turns = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.best = None
        self.tampered = False
        self.invalid_calls = 0
        self.evaluations = 0
        self.verified_any = False
        self.wall_before = 0.0
        self.last_prompt = None  # (prompt_tokens, chars) of the last call: the chars-to-tokens ratio

    def _restore(self, events):
        self._fresh_state()
        for e in events:
            if e["type"] == "message" and e["message"].get("role") == "assistant":
                self.turns += 1
                u = (e.get("llm") or {}).get("usage") or {}
                self.prompt_tokens += u.get("prompt_tokens") or 0
                self.completion_tokens += u.get("completion_tokens") or 0
            elif e["type"] == "message" and (e.get("tool") or {}).get("invalid"):
                self.invalid_calls += 1
            elif e["type"] == "evaluation":
                self.evaluations += 1
                self.verified_any |= bool(e["result"].get("verified"))
                self.tampered |= bool(e["result"].get("tampered"))
            elif e["type"] == "best":
                self.best = e["candidate"]
            elif e["type"] == "resume":
                self.wall_before = e.get("wall_s_before", self.wall_before)
            elif e["type"] == "segment_end":
                self.wall_before = e.get("wall_s", self.wall_before)

    # --- main
    def run(self, resume=False, force=False):
        self.t0 = time.monotonic()
        ws = Workspace(self.out)
        if os.path.exists(self.path) and resume:
            events = trajectory.load(self.path, repair=True)
            done = trajectory.episode_summary(events)
            if done:
                return done
            self._restore(events)
            self.w = trajectory.TrajectoryWriter(self.path, seq=len(events))
            self.tools = Tools(ws, self.harness, self.device, self.client.api_key_env, self.use_bwrap)
            messages = trajectory.messages_of(events)
            self.w.write("resume", at_turn=self.turns, wall_s_before=self._wall_from(events))
            self.wall_before = self._wall_from(events)
            messages = self._close_pending(messages)
        else:
            if os.path.exists(self.path) and not force:
                raise FileExistsError("%s exists: pass --resume to continue it or --force to start again" % self.path)
            if os.path.exists(self.path):
                os.remove(self.path)
            shutil.rmtree(os.path.join(self.out, "best"), ignore_errors=True)
            self._fresh_state()
            ws = create_workspace(self.out, self.problem, self.protocol, force=True)
            self.tools = Tools(ws, self.harness, self.device, self.client.api_key_env, self.use_bwrap)
            if self.start_from_kforge:
                text, meta = self.tools.call("kforge_export", "{}")
                self.log("start from kforge's program: %s" % text.splitlines()[-1:] if text else "")
            self.w = trajectory.TrajectoryWriter(self.path)
            self._header(ws)
            messages = []
            for m in self._opening(ws):
                messages.append(m)
                self.w.write("message", message=m, turn=0)
        self.ws = ws
        stop = self._loop(messages)
        return self._finish(stop)

    def _wall_from(self, events):
        # wall time of earlier segments: from the header to the last event before this resume
        t_start = next((e["time"] for e in events if e["type"] == "header"), None)
        t_last = events[-1]["time"] if events else None
        base = 0.0
        for e in events:
            if e["type"] == "resume":
                base = e.get("wall_s_before", 0.0)
                t_start = e["time"]
        return base + ((t_last - t_start) if t_start is not None and t_last is not None else 0.0)

    def _header(self, ws):
        with open(self.problem, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        self.w.write("header", problem=self.problem, problem_name=os.path.splitext(os.path.basename(self.problem))[0],
                     problem_sha256=digest, protocol=self.protocol, model=self.client.model,
                     llm_url=self.client.public_url(), budgets=self.b.to_json(), seed=self.seed,
                     temperature=self.temperature, device=self.device, tools=TOOL_SPECS,
                     protected=ws.manifest()["sha256"], isolation=self.tools.isolation(),
                     scripted_harness=bool(self.harness.scripted), start_from_kforge=self.start_from_kforge)

    def _opening(self, ws):
        skill = open(os.path.join(ws.root, "SKILL.md")).read()
        model = open(ws.model_py).read()
        task = ("Your workspace is %s. SKILL.md:\n\n%s\n\nmodel.py:\n\n```python\n%s```\n\nmodel_new.py holds %s. "
                "Begin." % (ws.root, skill, model,
                            "kforge's own program (correct, to improve)" if self.start_from_kforge else "a stub"))
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": task}]

    def _close_pending(self, messages):
        """After a kill: tool calls of the last assistant message that have no result get one that says so."""
        if not messages:
            return messages
        last_asst = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
        if last_asst is None:
            return messages
        answered = {m.get("tool_call_id") for m in messages[last_asst + 1:] if m.get("role") == "tool"}
        for tc in messages[last_asst].get("tool_calls") or []:
            if tc.get("id") not in answered:
                m = {"role": "tool", "tool_call_id": tc.get("id"),
                     "content": "error: interrupted: the run was stopped during this call and resumed; it may or may "
                                "not have taken effect; check the workspace"}
                messages.append(m)
                self.w.write("message", message=m, turn=self.turns,
                             tool={"tool": tc.get("function", {}).get("name"), "invalid": False, "interrupted": True})
        return messages

    def _estimate(self, messages):
        chars = _chars(messages) + _chars(TOOL_SPECS)
        ratio = (self.last_prompt[0] / self.last_prompt[1]) if self.last_prompt and self.last_prompt[1] else 0.25
        return int(chars * max(ratio, 0.2))

    def _manage_context(self, messages, force=False):
        limit = self.b.context_tokens - self.b.max_response_tokens
        if not force and self._estimate(messages) <= self.b.compaction_threshold * limit:
            return messages
        before = self._estimate(messages)
        new = messages
        for keep, clip_chars in ((8, 4000), (4, 2000), (2, 1000), (1, 500)):
            new = compact(messages, keep, clip_chars)
            if self._estimate(new) <= self.b.compaction_threshold * limit:
                break
        self.w.write("compaction", turn=self.turns, tokens_before=before, tokens_after=self._estimate(new),
                     forced=force, context=new)
        return new

    def _budget_stop(self):
        if self.turns >= self.b.max_turns:
            return "max_turns"
        if self.b.max_total_tokens and self.prompt_tokens + self.completion_tokens >= self.b.max_total_tokens:
            return "max_total_tokens"
        if self.b.time_limit_s and self.wall_before + time.monotonic() - self.t0 >= self.b.time_limit_s:
            return "time_limit"
        return None

    def _loop(self, messages):
        overflow_retries = 0
        while True:
            stop = self._budget_stop()
            if stop:
                return stop
            messages = self._manage_context(messages)
            try:
                resp, info = self.client.complete(
                    messages, tools=TOOL_SPECS, max_tokens=self.b.max_response_tokens, temperature=self.temperature,
                    logprobs=self.logprobs, on_retry=lambda r: self.w.write("retry", turn=self.turns, **r))
            except LLMError as e:
                if e.context_overflow() and overflow_retries < 3:
                    overflow_retries += 1
                    self.w.write("llm_error", turn=self.turns, status=e.status, message=str(e)[:1000],
                                 action="compact")
                    self.last_prompt = None
                    messages = self._manage_context(messages, force=True)
                    continue
                self.w.write("llm_error", turn=self.turns, status=e.status, message=str(e)[:1000], action="stop")
                return "llm_error"
            overflow_retries = 0
            msg, calls, llm = self._assistant_message(resp, info, messages)
            messages.append(msg)
            self.w.write("message", message=msg, turn=self.turns, llm=llm)
            if not calls:
                return "model_stopped"
            self._run_tools(calls, messages)
            if self.tampered:
                return "tampered"

    def _assistant_message(self, resp, info, messages):
        """The assistant message of a response (tool calls with ids), with the call's record; counts the turn."""
        choice = resp["choices"][0]
        raw = choice.get("message") or {}
        msg = {"role": "assistant", "content": raw.get("content")}
        calls = []
        for k, tc in enumerate(raw.get("tool_calls") or []):
            f = tc.get("function") or {}
            calls.append({"id": tc.get("id") or "call_%d_%d" % (self.turns, k), "type": "function",
                          "function": {"name": f.get("name"), "arguments": f.get("arguments", "")}})
        if calls:
            msg["tool_calls"] = calls
        usage = resp.get("usage") or {}
        self.turns += 1
        self.prompt_tokens += usage.get("prompt_tokens") or 0
        self.completion_tokens += usage.get("completion_tokens") or 0
        if usage.get("prompt_tokens"):
            self.last_prompt = (usage["prompt_tokens"], _chars(messages) + _chars(TOOL_SPECS))
        llm = {"latency_s": round(info["latency_s"], 3), "attempts": info["attempts"], "usage": usage,
               "finish_reason": choice.get("finish_reason"), "response_id": resp.get("id")}
        for key in ("logprobs", "token_ids", "prompt_token_ids"):
            if choice.get(key) is not None:
                llm[key] = choice[key]
        if resp.get("prompt_token_ids") is not None:
            llm["prompt_token_ids"] = resp["prompt_token_ids"]
        if raw.get("reasoning_content"):
            llm["reasoning_content"] = raw["reasoning_content"]
        return msg, calls, llm

    def _run_tools(self, calls, messages):
        for tc in calls:
            text, meta = self.tools.call(tc["function"]["name"], tc["function"]["arguments"])
            if meta.get("invalid"):
                self.invalid_calls += 1
            ev = meta.pop("evaluation", None)
            m = {"role": "tool", "tool_call_id": tc["id"], "content": text}
            messages.append(m)
            self.w.write("message", message=m, turn=self.turns, tool=meta)
            if ev is not None:
                self._record_evaluation(tc["function"]["name"], ev)

    def _record_evaluation(self, kind, r):
        self.evaluations += 1
        self.verified_any |= bool(r.get("verified"))
        self.tampered |= bool(r.get("tampered"))
        self.w.write("evaluation", turn=self.turns, kind=kind, result=r, reward=r.get("reward"))
        if r.get("outcome") == "ok" and r.get("verified") and r.get("reward") is not None and r["reward"] > 0:
            cand = {"turn": self.turns, "kind": kind, "reward": r["reward"], "t_candidate": r.get("t_candidate"),
                    "t_eager": r.get("t_eager"), "t_compile": r.get("t_compile"),
                    "scripted_harness": bool(r.get("scripted_harness"))}
            if better(cand, self.best):
                dst = os.path.join(self.out, "best")
                shutil.rmtree(dst, ignore_errors=True)
                os.makedirs(dst)
                shutil.copyfile(self.ws.model_new_py, os.path.join(dst, "model_new.py"))
                if os.path.isdir(self.ws.kernels_dir):
                    shutil.copytree(self.ws.kernels_dir, os.path.join(dst, "kernels"))
                with open(os.path.join(dst, "model_new.py"), "rb") as f:
                    cand["sha256"] = hashlib.sha256(f.read()).hexdigest()
                self.best = cand
                self.w.write("best", turn=self.turns, candidate=cand)

    def _finish(self, stop):
        wall = self.wall_before + time.monotonic() - self.t0
        reward = -1 if (self.tampered or self.best is None) else self.best["reward"]
        note = ""
        if self.tampered:
            note = "the protected files were changed: the episode scores -1"
        elif self.best is None and not self.verified_any:
            note = "no candidate was verified (no GPU here, or none passed the static checks): reward -1"
        end = self.w.write(
            "episode_end", stop_reason=stop, reward=reward, turns=self.turns, prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens, total_tokens=self.prompt_tokens + self.completion_tokens,
            wall_s=round(wall, 3), evaluations=self.evaluations, verified_any=self.verified_any,
            invalid_tool_calls=self.invalid_calls, tampered=self.tampered, best=self.best,
            best_path=os.path.join(self.out, "best", "model_new.py") if self.best else None, note=note)
        self.w.close()
        return end
