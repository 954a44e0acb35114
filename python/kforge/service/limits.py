"""Request size limits (an ASGI middleware: a body past the limit is a 413 before the app reads it) and the
service's metrics (Prometheus text at /v1/metrics)."""

import collections
import json


class BodyLimit:
    def __init__(self, app, max_bytes, metrics):
        self.app, self.max_bytes, self.metrics = app, max_bytes, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                return await self._refuse(send)
        seen = 0
        refused = False

        async def limited():
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    refused = True
                    raise BodyTooLarge()
            return message

        try:
            await self.app(scope, limited, send)
        except BodyTooLarge:
            await self._refuse(send)

    async def _refuse(self, send):
        self.metrics.status(413)
        body = json.dumps({"error": "the request body is larger than %d bytes, the server's limit (--max-body-bytes); "
                                   "send a smaller file" % self.max_bytes}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class BodyTooLarge(Exception):
    pass


class Metrics:
    def __init__(self):
        self.counters = collections.Counter()
        self.latencies = collections.deque(maxlen=10000)  # seconds from submission to result, recent jobs

    def status(self, code):
        self.counters["responses_%d" % code] += 1

    def observe(self, seconds):
        self.latencies.append(seconds)

    def render(self, gauges):
        lines = []
        for k, v in sorted(self.counters.items()):
            lines.append("kforge_%s_total %d" % (k, v))
        for k, v in sorted(gauges.items()):
            lines.append("kforge_%s %s" % (k, v))
        lat = sorted(self.latencies)
        for q in (0.5, 0.99):
            if lat:
                lines.append('kforge_job_latency_seconds{quantile="%s"} %.4f' % (q, lat[min(len(lat) - 1, int(q * len(lat)))]))
        lines.append("kforge_job_latency_seconds_count %d" % len(lat))
        return "\n".join(lines) + "\n"
