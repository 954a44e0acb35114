"""kforge serve (issue #24): an HTTP/JSON API (api.py) over a Ray pool of build and GPU evaluation workers
(pool.py) that run the kforge binary (jobs.py), with durable state in SQLite (store.py). docs/service.md."""
