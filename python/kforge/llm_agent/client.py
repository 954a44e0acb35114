"""An OpenAI-compatible chat-completions client on the standard library (http.client): no dependency
to install on a trainer's or a GPU machine, explicit timeouts, and retries with exponential back-off
and jitter on 429, 5xx, timeouts and dropped connections (Retry-After is honoured). The API key comes
from an environment variable only and is never returned, logged or recorded."""
import http.client
import json
import os
import random
import socket
import time
import urllib.parse

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}


class LLMError(Exception):
    """A request that failed for good: `status` (HTTP status or None), `body` (the server's words)."""

    def __init__(self, message, status=None, body="", attempts=1):
        super().__init__(message)
        self.status = status
        self.body = body
        self.attempts = attempts

    def context_overflow(self):
        text = (self.body or "").lower()
        return self.status in (400, 413) and any(
            w in text for w in ("context_length", "context length", "maximum context", "too many tokens",
                                "context window", "prompt is too long"))


class ChatClient:
    def __init__(self, base_url, model, api_key_env="OPENAI_API_KEY", timeout=600.0, max_retries=6,
                 backoff_base=1.0, backoff_max=60.0, seed=0, sleep=time.sleep):
        u = urllib.parse.urlsplit(base_url if "://" in base_url else "http://" + base_url)
        self.scheme, self.host, self.port = u.scheme, u.hostname, u.port
        path = u.path.rstrip("/")
        if not path.endswith("/chat/completions"):
            path = (path if path.endswith("/v1") else path + "/v1") + "/chat/completions"
        self.path = path
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.rng = random.Random(seed)
        self.sleep = sleep

    def public_url(self):
        """The server's address as records keep it: no user info, no query string."""
        return "%s://%s%s%s" % (self.scheme, self.host, ":%d" % self.port if self.port else "", self.path)

    def _headers(self):
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:
            h["Authorization"] = "Bearer " + key
        return h

    def _post_once(self, body):
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        conn = cls(self.host, self.port, timeout=self.timeout)
        try:
            conn.request("POST", self.path, body=body, headers=self._headers())
            r = conn.getresponse()
            data = r.read().decode("utf-8", "replace")
            return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data
        finally:
            conn.close()

    def _delay(self, attempt, headers):
        ra = (headers or {}).get("retry-after")
        if ra:
            try:
                return min(self.backoff_max, max(0.0, float(ra)))
            except ValueError:
                pass
        d = min(self.backoff_max, self.backoff_base * (2 ** attempt))
        return d * (0.5 + 0.5 * self.rng.random())

    def complete(self, messages, tools=None, max_tokens=None, temperature=None, logprobs=False, extra=None,
                 on_retry=None):
        """One chat completion. Returns (response dict, info) with info = {attempts, latency_s}.
        Raises LLMError for a failure that retries did not cure (or that no retry can: 4xx)."""
        req = {"model": self.model, "messages": messages}
        if tools:
            req["tools"] = tools
            req["tool_choice"] = "auto"
        if max_tokens:
            req["max_tokens"] = max_tokens
        if temperature is not None:
            req["temperature"] = temperature
        if logprobs:
            req["logprobs"] = True
        if extra:
            req.update(extra)
        body = json.dumps(req).encode()
        t0 = time.monotonic()
        attempt = 0
        while True:
            status, headers, data, err = None, {}, "", None
            try:
                status, headers, data = self._post_once(body)
            except (socket.timeout, TimeoutError) as e:
                err = "timed out after %.0f s (%s)" % (self.timeout, e)
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                err = "connection failed: %s" % e
            if err is None and status == 200:
                try:
                    resp = json.loads(data)
                except ValueError:
                    err = "the server's answer is not JSON: %r" % data[:200]
                else:
                    if not isinstance(resp, dict) or not resp.get("choices"):
                        err = "the server's answer has no choices: %r" % data[:200]
                    else:
                        return resp, {"attempts": attempt + 1, "latency_s": time.monotonic() - t0}
            retryable = err is not None or status in RETRY_STATUS
            if not retryable:
                raise LLMError("the server answered HTTP %s: %s" % (status, data[:500]), status, data, attempt + 1)
            if attempt >= self.max_retries:
                raise LLMError("gave up after %d attempts: %s" % (attempt + 1, err or "HTTP %s: %s" % (status, data[:300])),
                               status, data, attempt + 1)
            delay = self._delay(attempt, headers)
            if on_retry:
                on_retry({"attempt": attempt + 1, "status": status, "error": err or data[:300], "delay_s": delay})
            self.sleep(delay)
            attempt += 1
