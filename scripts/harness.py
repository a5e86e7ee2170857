"""What the harnesses under scripts/ share (faults.py, hostile.py); standard library only.

- `Skip` / `Abort`: a scenario that cannot run here / cannot go on (a failure was recorded).
- `Scenario`: per-scenario bookkeeping (failures, notes, metrics, servers, cleanups, a directory).
- `Server`: one `server serve` process on a free port, its log, its pid in the run's pid file.
- `PidFile`: the pids of the servers a run started, for the shell wrapper's backstop cleanup.
- PostgreSQL: `psql`, `with_db`, `throwaway_pg_db` (a fresh database on the shared server,
  dropped when the scenario ends; `Skip` when psql or the server is missing).
- `free_port`, `log_tail`, `scan_log`, `md_table`.

A scenario object handed to `Server` needs `dir`, `servers`, `metrics`, `fail(msg)` and `cfg`
(with `bin`, `rust_log` and `track(pid, alive)`); `Scenario` has them all.
"""

import argparse
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse


def now():
    return time.monotonic()


class Skip(Exception):
    """The scenario cannot run here (the message says why)."""


class Abort(Exception):
    """The scenario cannot go on (a failure was recorded)."""


class PidFile:
    """The pids of the live servers of this run, one a line in `path`."""

    def __init__(self, path):
        self.path = path
        self.pids = set()

    def track(self, pid, alive):
        (self.pids.add if alive else self.pids.discard)(pid)
        with open(self.path, "w") as f:
            f.write("".join(f"{p}\n" for p in sorted(self.pids)))


class Scenario:
    """Bookkeeping of one scenario run: `fail`/`check` record failures, `note` facts (both are
    printed as they happen), `metrics` holds numbers for the summary."""

    def __init__(self, name, cfg, dirname=None):
        self.name = name
        self.cfg = cfg
        self.dir = os.path.join(cfg.work, dirname or name)
        os.makedirs(self.dir, exist_ok=True)
        self.failures, self.notes_ = [], []
        self.servers, self.cleanups = [], []
        self.metrics = {}

    def fail(self, msg):
        msg = msg if len(msg) <= 1500 else msg[:1500] + " …"
        self.failures.append(msg)
        print(f"  FAIL: {msg}", flush=True)

    def check(self, ok, msg):
        if not ok:
            self.fail(msg)
        return ok

    def note(self, msg):
        self.notes_.append(msg)
        print(f"  {msg}", flush=True)

    def tear_down(self, kill=False):
        """Stops the scenario's servers (SIGKILL with `kill`, else a bounded SIGTERM), then runs
        its cleanups, last first; a cleanup that fails is reported, not raised."""
        for server in self.servers:
            if kill:
                server.kill()
            elif server.alive():
                server.stop(timeout=15)
        for cleanup in reversed(self.cleanups):
            try:
                cleanup()
            except Exception as e:  # noqa: BLE001 - reported, the other cleanups still run
                print(f"  (cleanup: {e})", flush=True)


def command_line(doc):
    """The harnesses' shared command line: the server binary, the work directory, a run id and
    the scenarios to run. A SIGTERM becomes a KeyboardInterrupt, so every scenario's cleanup
    runs."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--run-id", default="")
    ap.add_argument("scenarios", nargs="*", help="names (default: all)")
    args = ap.parse_args()

    def terminated(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)
    return args


class BaseConfig:
    """What every harness takes from its command line and its PREFIX_* environment: the binary,
    the work directory, the run id, the PostgreSQL admin URL and the server's log level."""

    def __init__(self, args, prefix):
        self.bin = os.path.abspath(args.bin)
        self.work = os.path.abspath(args.work)
        self.run_id = args.run_id or os.getpid()
        self.pg_admin = os.environ.get(f"{prefix}_PG_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
        self.rust_log = os.environ.get(f"{prefix}_RUST_LOG", "warn")
        self.track = PidFile(os.path.join(self.work, "pids")).track


def free_port(host="127.0.0.1"):
    s = socket.socket()
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Probe:
    """The answer to one plain GET (`status` None when there was none)."""

    __slots__ = ("status", "body", "err")

    def __init__(self, status=None, body=b"", err=None):
        self.status, self.body, self.err = status, body, err


def probe(base, path="/health", timeout=5.0):
    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return Probe(r.status, r.read())
    except Exception as e:  # noqa: BLE001 - no answer is an observation
        return Probe(err=type(e).__name__)
    finally:
        c.close()


class Server:
    """`<bin> serve` on DATABASE_URL `db_url` and a free port of 127.0.0.1, with `env` on top
    of the inherited environment; output appended to `<scenario dir>/<log>`."""

    def __init__(self, ctx, db_url, env=None, log="server.log"):
        self.ctx, self.db_url, self.env = ctx, db_url, dict(env or {})
        self.log_path = os.path.join(ctx.dir, log)
        self.proc = None
        self.base = None
        self.port = None
        ctx.servers.append(self)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self, healthy=True, timeout=90):
        """Starts and waits for /health: 200 (or any answer unless `healthy`); returns that
        answer (a `Probe`). A server that does not get there fails the scenario (Abort)."""
        cfg = self.ctx.cfg
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        env.update({"DATABASE_URL": self.db_url, "BIND": f"127.0.0.1:{self.port}", "RUST_LOG": cfg.rust_log})
        env.update(self.env)
        with open(self.log_path, "ab") as log:
            shown = {k: ("***" if "SECRET" in k or "KEY" in k else v) for k, v in self.env.items()}
            log.write(f"=== start {time.strftime('%H:%M:%S')} {self.base} {shown}\n".encode())
            log.flush()
            self.proc = subprocess.Popen([cfg.bin, "serve"], cwd=self.ctx.dir, env=env,
                                         stdout=log, stderr=subprocess.STDOUT)
        cfg.track(self.proc.pid, True)
        deadline = now() + timeout
        while now() < deadline:
            r = probe(self.base, timeout=2.5)
            if r.status == 200 or (r.status is not None and not healthy):
                return r
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        rc = self.proc.poll()
        self.ctx.fail(f"the server did not {'become healthy' if healthy else 'answer'} within "
                      f"{timeout}s (exit status {rc}); last log lines:\n{self.tail(12)}")
        self.kill()
        raise Abort()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.ctx.cfg.track(self.proc.pid, False)
        return rc

    def kill(self):
        if self.alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()
            self.ctx.cfg.track(self.proc.pid, False)

    def stop(self, timeout=20):
        """SIGTERM; returns the exit status (fails the scenario if it does not exit)."""
        if not self.alive():
            return self.proc.returncode if self.proc else None
        t0 = now()
        self.signal(signal.SIGTERM)
        rc = self.wait(timeout)
        if rc is None:
            self.ctx.fail(f"the server did not exit within {timeout}s of SIGTERM")
            self.kill()
        else:
            self.ctx.metrics.setdefault("stop_s", []).append(round(now() - t0, 2))
        return rc

    def tail(self, n):
        return log_tail(self.log_path, n)


def log_tail(path, n):
    try:
        with open(path, errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return ""
    return "".join("    | " + line for line in lines[-n:]).rstrip()


def scan_log(path):
    """(panics, ERROR lines) in a server log."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return 0, 0
    return text.count("panicked at"), len(re.findall(r" ERROR ", text))


# --------------------------------------------------------------------------------------------
# PostgreSQL


def psql(url, sql, timeout=30, check=True):
    p = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql],
                       capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "PGCONNECT_TIMEOUT": "5"})
    if check and p.returncode != 0:
        raise RuntimeError(f"psql {sql!r}: {p.stderr.strip()}")
    return p.stdout.strip()


def with_db(url, db):
    u = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + db, u.query, u.fragment))


def pg_unreachable(admin):
    """Why the shared PostgreSQL at `admin` cannot be used, or None."""
    if shutil.which("psql") is None:
        return "psql is not installed"
    p = subprocess.run(["psql", "-X", "-At", "-d", admin, "-c", "select 1"], capture_output=True,
                       text=True, timeout=20, env={**os.environ, "PGCONNECT_TIMEOUT": "5"})
    if p.returncode != 0:
        return f"the shared PostgreSQL {admin} is unreachable: {' '.join(p.stderr.split())[:200]}"
    return None


def throwaway_pg_db(ctx, admin, db):
    """A fresh database `db` on the shared PostgreSQL at `admin`, dropped when the scenario's
    cleanups run; returns its URL. Skip when PostgreSQL cannot be used."""
    why = pg_unreachable(admin)
    if why:
        raise Skip(why)
    psql(admin, f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    psql(admin, f"CREATE DATABASE {db}")
    ctx.cleanups.append(lambda: psql(admin, f"DROP DATABASE IF EXISTS {db} WITH (FORCE)", check=False))
    return with_db(admin, db)


# --------------------------------------------------------------------------------------------
# Reports


def md_table(head, rows):
    """A Markdown table; `|` in cells is escaped, line breaks become spaces."""
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(" ".join(str(c).replace("|", "\\|").splitlines()) for c in row) + " |"
           for row in rows]
    return md
