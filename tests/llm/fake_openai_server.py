"""A real HTTP server process that speaks the OpenAI chat-completions protocol and replays a recorded
tool-call script (tests of kforge agent, label llm). Usage:

    python fake_openai_server.py SCRIPT.json --port-file PORT --log REQUESTS.jsonl

It prints nothing; PORT gets the port it listens on (127.0.0.1, chosen by the kernel). SCRIPT:
{"steps": [STEP, ...], "context_limit_chars": N (optional)}. Each request takes the next step:
  {"tool_calls": [{"name": N, "arguments": {...} | "raw": "text"}], "content": "..."}   an assistant turn
  {"content": "..."}                                    an answer without tool calls (the episode ends)
  {"http_error": 503, "retry_after": 0}                 an error status (the step is used up)
  {"sleep": SECONDS}                                    no answer for that long (a client timeout), then the next
  {"raw_body": "text"}                                  HTTP 200 with that body (not a chat completion)
  {"logprobs": true} in a step adds token ids and log-probs to its answer.
A request larger than context_limit_chars gets HTTP 400 "maximum context length" without using a step.
After the last step every request gets {"content": "done"}. Every request is logged (with whether an
Authorization header came, never its value)."""
import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("script")
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    script = json.load(open(a.script))
    steps = script["steps"]
    limit = script.get("context_limit_chars")
    state = {"i": 0, "n": 0}

    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, code, obj, headers=None):
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            req = json.loads(body)
            with LOCK:
                over = limit is not None and len(body) > limit
                step = None if over else (steps[state["i"]] if state["i"] < len(steps) else {"content": "done"})
                if not over and state["i"] < len(steps):
                    state["i"] += 1
                state["n"] += 1
                with open(a.log, "a") as f:
                    f.write(json.dumps({"n": state["n"], "path": self.path, "chars": len(body),
                                        "messages": len(req.get("messages", [])), "model": req.get("model"),
                                        "tools": len(req.get("tools", [])),
                                        "authorization": bool(self.headers.get("Authorization")),
                                        "auth_ok": self.headers.get("Authorization") == "Bearer " + script.get("expect_key", "\0"),
                                        "step": state["i"] - 1 if step is not None else None,
                                        "over_limit": over}) + "\n")
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._send(404, {"error": {"message": "no such route"}})
            if over:
                return self._send(400, {"error": {"message": "This model's maximum context length is exceeded "
                                                             "(context_length_exceeded)", "type": "invalid_request_error"}})
            if "sleep" in step:
                time.sleep(step["sleep"])
                return self._send(200, {"id": "late", "choices": [{"index": 0, "finish_reason": "stop",
                                                                   "message": {"role": "assistant", "content": "late"}}]})
            if "raw_body" in step:  # a 200 whose body is not a chat completion
                data = step["raw_body"].encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            if "http_error" in step:
                h = {"Retry-After": str(step["retry_after"])} if "retry_after" in step else {}
                return self._send(step["http_error"], {"error": {"message": "scripted error %d" % step["http_error"]}}, h)
            msg = {"role": "assistant", "content": step.get("content")}
            calls = []
            for k, c in enumerate(step.get("tool_calls", [])):
                args = c["raw"] if "raw" in c else json.dumps(c.get("arguments", {}))
                calls.append({"id": "call_%d_%d" % (state["n"], k), "type": "function",
                              "function": {"name": c["name"], "arguments": args}})
            if calls:
                msg["tool_calls"] = calls
            choice = {"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop"}
            if step.get("logprobs"):
                choice["logprobs"] = {"content": [{"token": "ok", "logprob": -0.25, "bytes": [111, 107]}]}
                choice["token_ids"] = [1, 2, 3]
            prompt_tokens = len(body) // 4
            self._send(200, {"id": "cmpl-%d" % state["n"], "object": "chat.completion", "model": req.get("model"),
                             "choices": [choice],
                             "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 20,
                                       "total_tokens": prompt_tokens + 20}})

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.replace(a.port_file + ".tmp", a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
