"""A client of kforge serve (httpx): what the trainer adapters use. Every call that changes something
carries an Idempotency-Key, so retrying it after a dropped connection or a restarted server never does it
twice; a 429 is retried after its Retry-After seconds."""

import time
import uuid

import httpx


class ServiceError(Exception):
    def __init__(self, status, message):
        super().__init__("%s: %s" % (status, message))
        self.status, self.message = status, message


class Client:
    def __init__(self, url, token, timeout=600.0, retry_for=900.0, transport=None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retry_for = retry_for
        self.stats = {"retries_429": 0, "retries_connection": 0}
        self.http = httpx.Client(base_url=self.url, headers={"Authorization": "Bearer " + token},
                                 timeout=httpx.Timeout(timeout + 30, connect=10), transport=transport)

    def close(self):
        self.http.close()

    def _request(self, method, path, body=None, key=None, params=None):
        deadline = time.time() + self.retry_for
        headers = {"Idempotency-Key": key} if key else {}
        while True:
            try:
                r = self.http.request(method, path, json=body, headers=headers, params=params)
            except httpx.TransportError:
                if time.time() > deadline:
                    raise
                self.stats["retries_connection"] += 1
                time.sleep(0.5)
                continue
            if r.status_code == 429 and time.time() < deadline:
                self.stats["retries_429"] += 1
                time.sleep(float(r.headers.get("Retry-After", "1")))
                continue
            if r.status_code >= 500 and time.time() < deadline and method == "GET":
                time.sleep(0.5)
                continue
            if r.status_code >= 400:
                try:
                    msg = r.json().get("error", r.text)
                except ValueError:
                    msg = r.text
                raise ServiceError(r.status_code, msg)
            return r.json()

    def _job(self, path, body=None):
        """POSTs a job and waits for its result (the job's view, state done)."""
        job = self._request("POST", path, body, key=uuid.uuid4().hex, params={"wait": min(60, self.timeout)})
        deadline = time.time() + self.timeout
        while job["state"] != "done":
            if time.time() > deadline:
                raise ServiceError(504, "job %s not done after %.0f s" % (job["job"], self.timeout))
            job = self._request("GET", "/v1/jobs/%s" % job["job"], params={"wait": 30})
        return job

    def _follow(self, job):
        # A synthesized task's job hands over to the reset of the session it made.
        nxt = (job.get("result") or {}).get("next_job")
        while nxt:
            job = self._request("GET", "/v1/jobs/%s" % nxt, params={"wait": 30})
            if job["state"] == "done":
                nxt = (job.get("result") or {}).get("next_job")
        return job

    def health(self):
        return self._request("GET", "/v1/health")

    def create_session(self, task, mode="skill", protocol="cuda-agent", max_turns=150):
        job = self._follow(self._job("/v1/sessions", {"task": task, "mode": mode, "protocol": protocol,
                                                      "max_turns": max_turns}))
        return job["session"], job["result"]

    def reset(self, sid):
        return self._job("/v1/sessions/%s/reset" % sid)["result"]

    def step(self, sid, action, evaluate=True):
        return self._job("/v1/sessions/%s/step" % sid, {"action": action, "evaluate": evaluate})["result"]

    def submit(self, sid, model_new, profile=True):
        return self._job("/v1/sessions/%s/submit" % sid, {"model_new": model_new, "profile": profile})["result"]

    def evaluate(self, sid):
        return self._job("/v1/sessions/%s/evaluate" % sid)["result"]

    def reward(self, sid):
        return self._request("GET", "/v1/sessions/%s/reward" % sid)

    def records(self, sid):
        return self._request("GET", "/v1/sessions/%s/records" % sid)["records"]

    def best(self, sid):
        return self._request("GET", "/v1/sessions/%s/best" % sid)["best"]

    def session(self, sid):
        return self._request("GET", "/v1/sessions/%s" % sid)

    def close_session(self, sid):
        return self._request("DELETE", "/v1/sessions/%s" % sid)
