"""python -m kforge.service (what `kforge serve` runs): the HTTP API on uvicorn."""

import logging
import sys

import uvicorn

from kforge.service.api import make_app
from kforge.service.config import parse


def main(argv=None):
    cfg, a = parse(argv)
    logging.basicConfig(level=a.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    print("kforge serve: http://%s:%d (OpenAPI: /openapi.json; health: /v1/health); Ray %s" %
          (cfg.host, cfg.port, cfg.address or "embedded"), file=sys.stderr, flush=True)
    uvicorn.run(make_app(cfg), host=cfg.host, port=cfg.port, log_level=a.log_level, access_log=False,
                timeout_graceful_shutdown=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
