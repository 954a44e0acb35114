"""The service's durable state (SQLite, WAL): sessions, jobs and the records of every evaluation.

A job's result is written once: `finish` commits the result, the session's change (the step taken, the
record appended) and the job's state in one transaction, and only while the job is not done yet, so a
retried or re-run job can never answer twice or apply its step twice. A job is found again by its id or by
the client's idempotency key; jobs that were queued or running when the server died are queued again at
start (`unfinished`).
"""

import json
import sqlite3
import threading
import time
import uuid

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY, client TEXT NOT NULL, mode TEXT NOT NULL, problem TEXT NOT NULL,
  protocol TEXT NOT NULL, origin TEXT NOT NULL, actions TEXT NOT NULL DEFAULT '[]',
  observation TEXT, evlog TEXT NOT NULL DEFAULT '', candidate TEXT, pending_job TEXT, closed INTEGER NOT NULL DEFAULT 0,
  created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY, client TEXT NOT NULL, session TEXT, kind TEXT NOT NULL, pool TEXT NOT NULL,
  payload TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, workers TEXT NOT NULL DEFAULT '[]',
  result TEXT, idem_key TEXT, created REAL NOT NULL, started REAL, finished REAL, answers INTEGER NOT NULL DEFAULT 0);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_idem ON jobs(client, idem_key) WHERE idem_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE TABLE IF NOT EXISTS records (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, job TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
  turn INTEGER, outcome TEXT, t_candidate REAL, reward REAL, predicted INTEGER NOT NULL,
  program TEXT, result TEXT NOT NULL, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS records_session ON records(session);
"""


def new_id(prefix):
    return prefix + "-" + uuid.uuid4().hex[:16]


class Store:
    def __init__(self, path):
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)

    def close(self):
        with self._lock:
            self._db.close()

    def _tx(self, fn):
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                out = fn(self._db)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return out

    def _one(self, sql, args=()):
        with self._lock:
            row = self._db.execute(sql, args).fetchone()
        return dict(row) if row else None

    def _all(self, sql, args=()):
        with self._lock:
            return [dict(r) for r in self._db.execute(sql, args).fetchall()]

    # Sessions.
    def create_session(self, client, mode, problem, protocol, origin):
        sid = new_id("s")
        self._tx(lambda db: db.execute(
            "INSERT INTO sessions(id, client, mode, problem, protocol, origin, created) VALUES (?,?,?,?,?,?,?)",
            (sid, client, mode, problem, protocol, json.dumps(origin), time.time())))
        return sid

    def session(self, sid):
        s = self._one("SELECT * FROM sessions WHERE id=?", (sid,))
        if s:
            s["actions"] = json.loads(s["actions"])
            s["origin"] = json.loads(s["origin"])
            s["observation"] = json.loads(s["observation"]) if s["observation"] else None
        return s

    def open_sessions(self, client):
        return self._one("SELECT COUNT(*) AS n FROM sessions WHERE client=? AND closed=0", (client,))["n"]

    def close_session(self, sid):
        self._tx(lambda db: db.execute("UPDATE sessions SET closed=1 WHERE id=?", (sid,)))

    # Jobs.
    def submit(self, client, session, kind, pool, payload, idem_key=None, new_session=None):
        """Returns (job, created): an existing job of the same client and idempotency key is returned as it is.
        A job on a session becomes its pending job; a session with another pending job refuses (None, False).
        `new_session` (mode, problem, protocol, origin): the session is made with its first job, in one
        transaction (a server killed between the two leaves neither)."""
        def tx(db):
            nonlocal session
            if idem_key is not None:
                row = db.execute("SELECT * FROM jobs WHERE client=? AND idem_key=?", (client, idem_key)).fetchone()
                if row:
                    return dict(row), False
            if new_session is not None:
                session = new_id("s")
                mode, problem, protocol, origin = new_session
                db.execute("INSERT INTO sessions(id, client, mode, problem, protocol, origin, created) "
                           "VALUES (?,?,?,?,?,?,?)", (session, client, mode, problem, protocol, json.dumps(origin),
                                                      time.time()))
            if session is not None:
                pending = db.execute("SELECT pending_job FROM sessions WHERE id=?", (session,)).fetchone()
                if pending and pending["pending_job"]:
                    return None, False
            jid = new_id("j")
            db.execute("INSERT INTO jobs(id, client, session, kind, pool, payload, state, idem_key, created) "
                       "VALUES (?,?,?,?,?,?,?,?,?)",
                       (jid, client, session, kind, pool, json.dumps(payload), "queued", idem_key, time.time()))
            if session is not None:
                db.execute("UPDATE sessions SET pending_job=? WHERE id=?", (jid, session))
            return dict(db.execute("SELECT * FROM jobs WHERE id=?", (jid,)).fetchone()), True
        return self._tx(tx)

    def job(self, jid):
        j = self._one("SELECT * FROM jobs WHERE id=?", (jid,))
        return decode_job(j) if j else None

    def start(self, jid, worker):
        """Marks an attempt on `worker`; returns the attempt number, or 0 when the job is already done."""
        def tx(db):
            row = db.execute("SELECT state, attempts, workers FROM jobs WHERE id=?", (jid,)).fetchone()
            if row is None or row["state"] == "done":
                return 0
            workers = json.loads(row["workers"]) + [worker]
            db.execute("UPDATE jobs SET state='running', attempts=attempts+1, workers=?, started=? WHERE id=?",
                       (json.dumps(workers), time.time(), jid))
            return row["attempts"] + 1
        return self._tx(tx)

    def requeue(self, jid):
        self._tx(lambda db: db.execute("UPDATE jobs SET state='queued' WHERE id=? AND state!='done'", (jid,)))

    def finish(self, jid, result, apply=None):
        """Writes the job's result once. `apply(db, job)` makes the session's change in the same transaction.
        Returns True when this call wrote it, False when the job was already done (nothing changes)."""
        def tx(db):
            cur = db.execute("UPDATE jobs SET state='done', result=?, finished=?, answers=answers+1 "
                             "WHERE id=? AND state!='done'", (json.dumps(result), time.time(), jid))
            if cur.rowcount != 1:
                return False
            job = decode_job(dict(db.execute("SELECT * FROM jobs WHERE id=?", (jid,)).fetchone()))
            if apply is not None:
                apply(db, job)
            if job["session"]:
                db.execute("UPDATE sessions SET pending_job=NULL WHERE id=? AND pending_job=?", (job["session"], jid))
            return True
        return self._tx(tx)

    def unfinished(self):
        return [decode_job(j) for j in self._all("SELECT * FROM jobs WHERE state!='done' ORDER BY created")]

    def pending_of(self, client):
        return self._one("SELECT COUNT(*) AS n FROM jobs WHERE client=? AND state!='done'", (client,))["n"]

    def counts(self):
        rows = self._all("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state")
        out = {r["state"]: r["n"] for r in rows}
        out["sessions"] = self._one("SELECT COUNT(*) AS n FROM sessions")["n"]
        out["answered_twice"] = self._one("SELECT COUNT(*) AS n FROM jobs WHERE answers > 1")["n"]
        return out

    # Records.
    def records(self, sid):
        rows = self._all("SELECT * FROM records WHERE session=? ORDER BY seq", (sid,))
        for r in rows:
            r["result"] = json.loads(r["result"])
            r["predicted"] = bool(r["predicted"])
        return rows


def decode_job(j):
    j["payload"] = json.loads(j["payload"])
    j["workers"] = json.loads(j["workers"])
    j["result"] = json.loads(j["result"]) if j["result"] else None
    return j


def add_record(db, session, job, kind, turn, result, program):
    """One evaluation of a session (inside finish's transaction)."""
    r = result.get("result") or {}
    db.execute("INSERT OR IGNORE INTO records(session, job, kind, turn, outcome, t_candidate, reward, predicted, program, "
               "result, created) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
               (session, job, kind, turn, r.get("outcome"), r.get("t_candidate"), result.get("reward"),
                1 if r.get("predicted", True) else 0, program, json.dumps(result), time.time()))
