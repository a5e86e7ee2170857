#!/usr/bin/env python3
"""Failover on a real HA stack (`just ha-test`; started by scripts/ha-test.sh, which installs
Patroni and etcd from Debian's packages, names the server binary and owns the work directory).
Standard library only, plus psql and the PostgreSQL 15 server binaries.

The stack, all on 127.0.0.1, on ports picked free in 25000-26999 (outside the ephemeral range):
one etcd member; three PostgreSQL 15 nodes run by Patroni with strict synchronous replication
(synchronous_mode and synchronous_mode_strict: a commit returns only once the synchronous
standby has flushed it, and with no synchronous standby nothing commits); a TCP relay in front of
each node (scripts/ha/relay.py), which is what the service connects to, so that a node's port
can be blackholed without a firewall (it listens only while its node does, so a node that is
down still refuses connections). Each round starts N server processes (`--instances 1,3`:
a round with one, then a round with three) with

    DATABASE_URL=postgres://postgres@127.0.0.1:R1,127.0.0.1:R2,127.0.0.1:R3/notes?target_session_attrs=read-write

and runs a mixed write load on them (HA_THREADS client threads, thread i writing on route i mod 4,
requests round-robin over the instances): notes and ledger appends with `Idempotency-Key`,
signed webhook deliveries, token issues and revokes. A write that gets a 503 or no answer is sent again (keyed writes with the
same key, webhooks with the same signature header, revokes as they were) until it gets a
definite answer; token issues take no key and are not retried. Every request and its answer
(status, body, latency) is kept and written to records.jsonl in the work directory.

Faults, injected one at a time on a settled cluster (a leader, a synchronous standby, every node
streaming), in rotation until each has run its count:

  switchover    Patroni switchover from the leader to the synchronous standby (REST API)
  kill          kill -9 of the primary node: its Patroni and every PostgreSQL process of it,
                at once; restarted once another node leads (it rejoins, rewound if need be)
  stop-primary  the primary node stopped (SIGTERM to its Patroni: PostgreSQL shut down fast,
                leader key released); started again once another node leads
  stop-sync     the synchronous standby node stopped the same way; started again once the
                leader has named the other replica synchronous
  freeze        SIGSTOP of the primary's postmaster and all its children for HA_FREEZE_S (30),
                then SIGCONT (Patroni keeps running; its leader key expires meanwhile)
  blackhole     the primary's relay stops forwarding for HA_BLACKHOLE_S (15): sockets stay
                open, nothing passes either way (Patroni's own traffic is not affected)

Pass criteria, printed per fault kind and round as one table (exit status 1 if any fails):
  - 0 acknowledged writes lost: after the last round, with the cluster settled, every 2xx is
    read back from the final primary directly (psql) with its id and content (notes, users,
    accounts, every event by (account, sequence), webhook deliveries, issued and revoked tokens)
  - 0 ids (and 0 `(account, sequence)`) answered twice with different content
  - writes resumed within the fault's bound, on every route (the longest time without a
    successful write, counted from the fault; bound() below, derived from Patroni's ttl)
  - every failure a 503 problem document with Retry-After, answered within 2.5 s; 0 × 500;
    every request answered (the servers never go away)
  - the same server processes throughout each round (pid and start time)
  - keyed retries applied once: every key (and every webhook delivery) is stored at most once,
    exactly once when it was acknowledged
  - `server ledger-check` on the final primary exits 0

Usage: ha_test.py --bin SERVER --work DIR [--short] [--instances 1,3] [FAULT[:COUNT] ...]
Environment: HA_RUNS (fault list, e.g. "switchover:2,kill:1"; arguments win), HA_INSTANCES,
HA_THREADS (4), HA_TTL (10), HA_LOOP_WAIT (1), HA_RETRY_TIMEOUT (4), HA_FREEZE_S (30),
HA_BLACKHOLE_S (15), HA_GAP_S (3: steady load between faults), HA_REPORT (write the table as
Markdown to this file), HA_SEED.
"""

import argparse
import ctypes
import hashlib
import hmac
import http.client
import json
import os
import pwd
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections import Counter, defaultdict

from harness import log_tail, md_table, scan_log

PG_BIN = "/usr/lib/postgresql/15/bin"
PORT_RANGE = (25000, 26999)  # below the ephemeral range (32768-60999)
HTTP_TIMEOUT = 10.0  # a request without an answer for this long is a hang
ANSWER_BOUND = 2.5  # every failure must be answered within this
RETRY_FOR = 150.0  # a write is sent again for this long at most
RETRY_SLEEP = 0.2
SETTLE_TIMEOUT = 240.0
# The load's routes: each client thread writes on one of them (thread i on ROUTES[i % 4]), so
# that a route that stalls does not hide whether the others resumed.
ROUTES = ["note", "append", "webhook", "token"]
ROUTE_OF = {"note": "note", "append": "append", "webhook": "webhook", "issue": "token", "revoke": "token"}
FULL = [("switchover", 10), ("kill", 5), ("stop-primary", 3), ("stop-sync", 3), ("freeze", 2), ("blackhole", 2)]
SHORT = [("switchover", 1), ("kill", 1), ("freeze", 1)]

CFG = None  # set by main()


def now():
    return time.monotonic()


def log(msg):
    print(msg, flush=True)


# --------------------------------------------------------------------------------------------
# Processes: every one started here is in the pid file (the shell wrapper's backstop), and the
# postmasters Patroni orphans are reaped here (this process is their subreaper).


class Procs:
    def __init__(self, path):
        self.path = path
        self.pids = set()
        self.lock = threading.Lock()

    def track(self, pid, alive=True):
        with self.lock:
            (self.pids.add if alive else self.pids.discard)(pid)
            with open(self.path, "w") as f:
                f.write("".join(f"{p}\n" for p in sorted(self.pids)))


def proc_stat(pid):
    """(state, ppid, start time) of a process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[19])


def proc_comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def children(pid):
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st and st[1] == pid:
                out.append(int(name))
    return out


def become_subreaper():
    """Patroni starts each postmaster through a helper that exits, so the postmaster is an
    orphan; PID 1 of this container does not reap, so a killed node would leave zombies that
    look alive to Patroni. As subreaper, this process adopts them and reaps them."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception as e:  # noqa: BLE001
        log(f"(could not become a subreaper: {e})")

    def reap():
        me = os.getpid()
        while True:
            for pid in children(me):
                st = proc_stat(pid)
                # Only adopted PostgreSQL processes: subprocess reaps what it started itself.
                if st and st[0] == "Z" and proc_comm(pid) == "postgres":
                    try:
                        os.waitpid(pid, os.WNOHANG)
                    except ChildProcessError:
                        pass
            time.sleep(0.2)

    threading.Thread(target=reap, daemon=True).start()


def pick_ports(n):
    """n ports of PORT_RANGE that nothing listens on, from a random start."""
    lo, hi = PORT_RANGE
    start = random.Random(os.getpid()).randrange(lo, hi)
    found = []
    for k in range(hi - lo):
        port = lo + (start - lo + k) % (hi - lo)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            found.append(port)
        except OSError:
            continue
        finally:
            s.close()
        if len(found) == n:
            return found
    raise RuntimeError(f"fewer than {n} free ports in {lo}-{hi}")


def psql(url, sql, timeout=30, check=True):
    p = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql],
                       capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "PGCONNECT_TIMEOUT": "3"})
    if check and p.returncode != 0:
        raise RuntimeError(f"psql {sql[:80]!r}: {p.stderr.strip()}")
    return p.stdout.strip() if p.returncode == 0 else None


def http_json(url, method="GET", body=None, timeout=3.0):
    """(status, parsed JSON or text) of one request to a Patroni or etcd API; (None, error)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode(errors="replace")
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


# --------------------------------------------------------------------------------------------
# The stack: etcd, three Patroni nodes, a relay per node


class Etcd:
    def __init__(self, work, client_port, peer_port):
        self.dir = os.path.join(work, "etcd")
        os.makedirs(self.dir, exist_ok=True)
        # Its data on tmpfs when there is one: etcd's own durability is not under test, and on a
        # busy disk its fdatasync took up to 3 s, long enough for Patroni's DCS requests to
        # time out (retry_timeout) and the leader to demote itself.
        shm = "/dev/shm"
        self.data = (os.path.join(shm, f"ha-test-etcd-{CFG.run_id}") if os.path.isdir(shm) and os.access(shm, os.W_OK)
                     else os.path.join(self.dir, "data"))
        self.client_port, self.peer_port = client_port, peer_port
        self.proc = None

    def start(self):
        c, p = f"http://127.0.0.1:{self.client_port}", f"http://127.0.0.1:{self.peer_port}"
        cmd = ["etcd", "--name", "ha", "--data-dir", self.data,
               "--listen-client-urls", c, "--advertise-client-urls", c,
               "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
               "--initial-cluster", f"ha={p}", "--initial-cluster-state", "new",
               "--initial-cluster-token", f"ha-{CFG.run_id}", "--enable-v2=true",
               "--log-level", "warn", "--logger", "zap"]
        with open(os.path.join(self.dir, "etcd.log"), "ab") as out:
            self.proc = subprocess.Popen(cmd, cwd=self.dir, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        CFG.procs.track(self.proc.pid)
        deadline = now() + 30
        while now() < deadline:
            st, body = http_json(f"{c}/health", timeout=1)
            if st == 200 and isinstance(body, dict) and body.get("health") == "true":
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError(f"etcd did not start:\n{log_tail(os.path.join(self.dir, 'etcd.log'), 10)}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            CFG.procs.track(self.proc.pid, False)
        if self.data.startswith("/dev/shm/"):
            shutil.rmtree(self.data, ignore_errors=True)


class Relay:
    def __init__(self, node, port):
        self.node, self.port = node, port
        self.proc = None
        self.blocked = False

    def start(self):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ha", "relay.py")
        self.proc = subprocess.Popen([sys.executable, script, str(self.port), str(self.node.pg_port), CFG.work],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     start_new_session=True)
        CFG.procs.track(self.proc.pid)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"the relay for {self.node.name} did not start ({line!r})")

    def block(self):
        self.proc.send_signal(signal.SIGUSR1)
        self.blocked = True

    def unblock(self):
        self.proc.send_signal(signal.SIGUSR2)
        self.blocked = False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            CFG.procs.track(self.proc.pid, False)


class Node:
    """One PostgreSQL node run by Patroni (as the postgres OS user when we are root)."""

    def __init__(self, idx, pg_port, rest_port, relay_port):
        self.name = f"node{idx + 1}"
        self.pg_port, self.rest_port = pg_port, rest_port
        self.dir = os.path.join(CFG.work, self.name)
        self.data = os.path.join(self.dir, "data")
        self.config = os.path.join(self.dir, "patroni.yml")
        self.log_path = os.path.join(self.dir, "patroni.log")
        self.relay = Relay(self, relay_port)
        self.proc = None
        self.frozen = []
        os.makedirs(self.dir, exist_ok=True)
        if CFG.pg_user:
            os.chown(self.dir, CFG.pg_user.pw_uid, CFG.pg_user.pw_gid)
        os.chmod(self.dir, 0o700)

    @property
    def rest(self):
        return f"http://127.0.0.1:{self.rest_port}"

    def url(self, db="notes"):
        return f"postgres://postgres@127.0.0.1:{self.pg_port}/{db}"

    def write_config(self, etcd_port):
        # JSON is YAML: no YAML writer needed.
        conf = {
            "scope": f"ha-{CFG.run_id}",
            "namespace": "/ha-test/",
            "name": self.name,
            "log": {"level": "INFO"},
            "restapi": {"listen": f"127.0.0.1:{self.rest_port}", "connect_address": f"127.0.0.1:{self.rest_port}"},
            # etcd's v2 API: Patroni 3.0.2 (Debian 12) renews the leader key there with a
            # compare-and-swap on its value. Its etcd3 code overwrites the key unconditionally once
            # its lease has expired (fixed in Patroni 3.0.3): a primary whose Patroni loop was
            # stuck past the ttl (the freeze fault) took the leader key back from the promoted
            # standby, which was then demoted and rewound with every write acknowledged meanwhile.
            "etcd": {"host": f"127.0.0.1:{etcd_port}", "protocol": "http"},
            "bootstrap": {
                "dcs": {
                    "ttl": CFG.ttl, "loop_wait": CFG.loop_wait, "retry_timeout": CFG.retry_timeout,
                    "maximum_lag_on_failover": 1048576,
                    "synchronous_mode": True, "synchronous_mode_strict": True,
                    "postgresql": {
                        "use_pg_rewind": True, "use_slots": True,
                        "parameters": {"wal_level": "replica", "hot_standby": "on", "wal_log_hints": "on",
                                       "max_wal_senders": 10, "max_replication_slots": 10,
                                       "max_connections": 120, "wal_keep_size": "256MB",
                                       # A standby whose primary went away tries the new one
                                       # after this (default 5 s, which every failover waited).
                                       "wal_retrieve_retry_interval": "500ms"},
                    },
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{self.pg_port}",
                "connect_address": f"127.0.0.1:{self.pg_port}",
                "data_dir": self.data,
                "bin_dir": PG_BIN,
                "pgpass": os.path.join(self.dir, "pgpass"),
                "authentication": {
                    "superuser": {"username": "postgres", "password": "ha-test"},
                    "replication": {"username": "replicator", "password": "ha-test"},
                    "rewind": {"username": "postgres", "password": "ha-test"},
                },
                "pg_hba": ["local all all trust", "host all all 127.0.0.1/32 trust",
                           "host replication all 127.0.0.1/32 trust"],
                "parameters": {"unix_socket_directories": self.dir, "shared_buffers": "64MB",
                               "log_min_messages": "warning", "log_line_prefix": "%m [%p] "},
                "remove_data_directory_on_rewind_failure": True,
                "remove_data_directory_on_diverged_timelines": True,
            },
            "tags": {"nofailover": False, "noloadbalance": False, "clonefrom": False, "nosync": False},
        }
        with open(self.config, "w") as f:
            json.dump(conf, f, indent=1)
        if CFG.pg_user:
            os.chown(self.config, CFG.pg_user.pw_uid, CFG.pg_user.pw_gid)

    def start(self):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.dir, "LANG": "C.UTF-8"}
        kw = {}
        if CFG.pg_user:
            kw = {"user": CFG.pg_user.pw_uid, "group": CFG.pg_user.pw_gid, "extra_groups": []}
        with open(self.log_path, "ab") as out:
            out.write(f"=== start {time.strftime('%H:%M:%S')}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(["/usr/bin/patroni", self.config], cwd=self.dir, env=env,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kw)
        CFG.procs.track(self.proc.pid)

    def patroni_alive(self):
        return self.proc is not None and self.proc.poll() is None

    def postmaster(self):
        """The live postmaster's pid, from postmaster.pid, or None."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                pid = int(f.readline().strip())
        except (OSError, ValueError):
            return None
        st = proc_stat(pid)
        if st is None or st[0] == "Z" or proc_comm(pid) != "postgres":
            return None
        return pid

    def pg_pids(self):
        pm = self.postmaster()
        return [] if pm is None else [pm] + children(pm)

    def stop(self, timeout=90):
        """SIGTERM to Patroni, which shuts PostgreSQL down (fast) and gives up the leader key."""
        if not self.patroni_alive():
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log(f"  {self.name}: Patroni did not stop within {timeout}s; killing it")
            self.kill9()
            return
        CFG.procs.track(self.proc.pid, False)

    def kill9(self):
        """SIGKILL to Patroni and every PostgreSQL process of this node, as a machine crash."""
        pids = self.pg_pids()
        if self.patroni_alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc is not None:
            self.proc.wait()
            CFG.procs.track(self.proc.pid, False)
        return pids

    def freeze(self):
        pm = self.postmaster()
        if pm is None:
            raise RuntimeError(f"{self.name} has no running postmaster to freeze")
        os.kill(pm, signal.SIGSTOP)  # first, so that it forks nothing more
        self.frozen = [pm]
        for _ in range(2):
            for pid in children(pm):
                if pid not in self.frozen:
                    try:
                        os.kill(pid, signal.SIGSTOP)
                        self.frozen.append(pid)
                    except ProcessLookupError:
                        pass
        return len(self.frozen)

    def thaw(self):
        for pid in reversed(self.frozen):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.frozen = []

    def cleanup(self):
        self.thaw()
        if self.patroni_alive():
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None:
            CFG.procs.track(self.proc.pid, False)
        if self.postmaster() is not None:
            self.pg_ctl_stop()
        self.relay.stop()

    def pg_ctl_stop(self):
        cmd = [os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "-t", "30", "stop"]
        if CFG.pg_user:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        subprocess.run(cmd, capture_output=True, timeout=60)


class Cluster:
    def __init__(self, nodes):
        self.nodes = nodes
        self.by_name = {n.name: n for n in nodes}
        self.suspect = set()  # nodes whose Patroni may hang or lie (frozen postgres)

    def status(self):
        """Patroni's view of the cluster ({name: member}) from a node that answers, or None."""
        order = [n for n in self.nodes if n.name not in self.suspect] + \
                [n for n in self.nodes if n.name in self.suspect]
        for n in order:
            if not n.patroni_alive():
                continue
            st, body = http_json(f"{n.rest}/cluster", timeout=2.0)
            if st == 200 and isinstance(body, dict):
                return {m["name"]: m for m in body.get("members", [])}
        return None

    @staticmethod
    def role(members, role):
        for name, m in (members or {}).items():
            if m.get("role") == role:
                return name
        return None

    def leader(self):
        return self.role(self.status(), "leader")

    def settled(self):
        """(True, leader) when the cluster is whole; else (False, why)."""
        members = self.status()
        if not members:
            return False, "no Patroni answers"
        if len(members) != len(self.nodes):
            return False, f"{len(members)} members"
        leader = self.role(members, "leader")
        sync = self.role(members, "sync_standby")
        if not leader or members[leader].get("state") != "running":
            return False, f"leader {leader} {members.get(leader, {}).get('state')}"
        if not sync:
            return False, "no synchronous standby"
        for name, m in members.items():
            if name != leader and (m.get("state") not in ("running", "streaming") or m.get("lag") != 0):
                return False, f"{name} {m.get('state')} lag {m.get('lag')}"
            if m.get("timeline") != members[leader].get("timeline"):
                return False, f"{name} on timeline {m.get('timeline')}"
        node = self.by_name[leader]
        try:
            row = psql(node.url("postgres"), "SELECT pg_is_in_recovery(), "
                       "(SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'), "
                       "(SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync')", timeout=5)
        except Exception as e:  # noqa: BLE001
            return False, f"psql on {leader}: {e}"
        if row != f"f|{len(self.nodes) - 1}|1":
            return False, f"{leader}: in recovery|streaming|sync = {row}"
        return True, leader

    def wait_settled(self, timeout=SETTLE_TIMEOUT):
        deadline = now() + timeout
        why = ""
        while now() < deadline:
            ok, why = self.settled()
            if ok:
                return why
            time.sleep(0.5)
        raise Settle(f"the cluster did not settle within {timeout:.0f}s: {why}")

    def wait_leader(self, not_name, timeout):
        """The name of a leader other than `not_name`, once there is one (None on timeout)."""
        deadline = now() + timeout
        while now() < deadline:
            members = self.status()
            leader = self.role(members, "leader")
            if leader and leader != not_name and members[leader].get("state") == "running":
                return leader
            time.sleep(0.2)
        return None

    def wait_sync_not(self, name, timeout):
        deadline = now() + timeout
        while now() < deadline:
            sync = self.role(self.status(), "sync_standby")
            if sync and sync != name:
                return sync
            time.sleep(0.2)
        return None


def service_connections(cluster):
    """How many connections the servers hold to each node, through its relay: "node1 48, ..."."""
    out = subprocess.run(["ss", "-Htn", "state", "established"], capture_output=True, text=True).stdout
    counts = Counter()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            counts[parts[3].rsplit(":", 1)[-1]] += 1
    return ", ".join(f"{n.name} {counts[str(n.relay.port)]}" for n in cluster.nodes)


def fresh_connection(url):
    """Where a new connection with the service's DATABASE_URL lands, and how long it takes."""
    t = now()
    p = subprocess.run(["psql", "-X", "-At", "-d", url, "-c", "SELECT current_setting('port')"],
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PGCONNECT_TIMEOUT": "2"})
    where = p.stdout.strip() if p.returncode == 0 else " ".join(p.stderr.split())[:120]
    return f"{where} in {now() - t:.1f}s"


class Settle(Exception):
    """The cluster did not come back whole: the run cannot go on."""


def start_stack(work):
    ports = pick_ports(2 + 3 * 3)
    etcd = Etcd(work, ports[0], ports[1])
    nodes = [Node(i, ports[2 + i], ports[5 + i], ports[8 + i]) for i in range(3)]
    CFG.etcd, CFG.nodes = etcd, nodes
    log(f"ports: etcd {ports[0]}/{ports[1]}; PostgreSQL {[n.pg_port for n in nodes]}; Patroni REST "
        f"{[n.rest_port for n in nodes]}; relays {[n.relay.port for n in nodes]}")
    t0 = now()
    etcd.start()
    for n in nodes:
        n.write_config(etcd.client_port)
    hosts = ",".join(f"127.0.0.1:{n.relay.port}" for n in nodes)
    CFG.db_url = f"postgres://postgres@{hosts}/notes?target_session_attrs=read-write"
    cluster = Cluster(nodes)
    nodes[0].start()
    if cluster.wait_leader(None, 120) is None:
        raise RuntimeError(f"node1 did not bootstrap:\n{log_tail(nodes[0].log_path, 20)}")
    for n in nodes[1:]:
        n.start()
    for n in nodes:
        n.relay.start()
    leader = cluster.wait_settled()
    psql(cluster.by_name[leader].url("postgres"), "CREATE DATABASE notes")
    version = psql(cluster.by_name[leader].url("postgres"), "SHOW server_version")
    log(f"cluster settled in {now() - t0:.1f}s: leader {leader}, PostgreSQL {version}, "
        f"ttl {CFG.ttl}s, loop_wait {CFG.loop_wait}s, retry_timeout {CFG.retry_timeout}s")
    return cluster


# --------------------------------------------------------------------------------------------
# The service


class Servers:
    def __init__(self, count, round_no, cluster):
        self.dir = os.path.join(CFG.work, f"servers-{round_no}")
        os.makedirs(self.dir, exist_ok=True)
        self.db_url = CFG.db_url
        self.count = count
        self.procs, self.bases, self.logs, self.ids = [], [], [], []

    def start(self):
        ports = pick_ports(self.count)
        for i, port in enumerate(ports):
            path = os.path.join(self.dir, f"server-{i}.log")
            env = {**os.environ, "DATABASE_URL": self.db_url, "BIND": f"127.0.0.1:{port}",
                   "RUST_LOG": "warn", "WEBHOOK_SECRET": CFG.secret}
            with open(path, "ab") as out:
                p = subprocess.Popen([CFG.bin, "serve"], cwd=self.dir, env=env, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
            CFG.procs.track(p.pid)
            self.procs.append(p)
            self.bases.append(("127.0.0.1", port))
            self.logs.append(path)
        for i, p in enumerate(self.procs):
            deadline = now() + 60
            while True:
                try:
                    c = http.client.HTTPConnection(*self.bases[i], timeout=3)
                    c.request("GET", "/health")
                    if c.getresponse().status == 200:
                        break
                except OSError:
                    pass
                if p.poll() is not None or now() > deadline:
                    raise RuntimeError(f"server {i} did not become healthy:\n{log_tail(self.logs[i], 12)}")
                time.sleep(0.2)
            self.ids.append((p.pid, proc_stat(p.pid)[2]))

    def unchanged(self):
        """The servers that are no longer the processes started (pid and start time)."""
        bad = []
        for i, p in enumerate(self.procs):
            st = proc_stat(p.pid)
            if p.poll() is not None or st is None or st[2] != self.ids[i][1]:
                bad.append(f"server {i} (pid {p.pid}, exit status {p.poll()})")
        return bad

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            CFG.procs.track(p.pid, False)


def migrate(cluster):
    leader = cluster.leader()
    p = subprocess.run([CFG.bin, "migrate"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "DATABASE_URL": cluster.by_name[leader].url(), "RUST_LOG": "warn"})
    if p.returncode != 0:
        raise RuntimeError(f"server migrate failed: {(p.stdout + p.stderr)[-600:]}")


# --------------------------------------------------------------------------------------------
# Load: every request and its answer


class Rec:
    __slots__ = ("n", "thread", "inst", "op", "method", "path", "key", "attempt", "t0", "t1", "status",
                 "err", "ctype", "retry_after", "replayed", "data", "round")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    @property
    def ok(self):
        return self.status is not None and 200 <= self.status < 300

    @property
    def latency(self):
        return self.t1 - self.t0

    def json(self):
        try:
            return json.loads(self.data)
        except (ValueError, TypeError):
            return None

    def slug(self):
        doc = self.json() if "json" in (self.ctype or "") else None
        if isinstance(doc, dict) and isinstance(doc.get("type"), str):
            return doc["type"].rstrip("/").rsplit("/", 1)[-1]
        if isinstance(doc, dict) and "error" in doc:
            return f"error: {doc['error']}"
        return None

    def problem_503(self):
        """Whether this failure is a 503 problem document with Retry-After."""
        return (self.status == 503 and (self.ctype or "").startswith("application/problem+json")
                and self.slug() is not None and (self.retry_after or "").strip().isdigit())

    def outcome(self):
        if self.err:
            return f"no answer ({self.err})"
        s = self.slug()
        return f"{self.status}" + (f" {s}" if s else "")


class Model:
    """What the clients were told."""

    def __init__(self):
        self.lock = threading.Lock()
        self.recs = []
        self.n = 0
        self.acks = []  # (kind, ident, content, rec)
        self.keys = {}  # key -> (kind, acknowledged?, retried?, replayed?)
        self.unacked_labels = set()  # token issues without an answer: stored at most once
        self.revoked = {}  # token id -> rec of the acknowledged revoke
        self.unexpected = []
        self.gave_up = []

    def next(self):
        with self.lock:
            self.n += 1
            return self.n

    def add(self, rec):
        with self.lock:
            rec.n = len(self.recs)
            self.recs.append(rec)

    def ack(self, kind, ident, content, rec):
        with self.lock:
            self.acks.append((kind, ident, content, rec))

    def bad(self, rec, why):
        with self.lock:
            self.unexpected.append((rec, why))


def canon(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class Worker:
    """One client thread: its own user, two accounts and tokens; keep-alive connections."""

    def __init__(self, load, idx):
        self.load, self.idx = load, idx
        self.m = load.model
        self.rng = random.Random(f"{CFG.seed}-{load.round_no}-{idx}")
        self.conns = {}
        self.turn = idx
        self.prefix = f"ha{CFG.run_id}-r{load.round_no}-w{idx}"
        self.uid = None
        self.accounts = []
        self.tokens = []  # acknowledged, not revoked

    # --- HTTP

    def request(self, op, method, path, body=None, headers=None, key=None, attempt=1, raw=None):
        inst = self.turn % len(self.load.bases)
        self.turn += 1
        rec = Rec(thread=self.idx, inst=inst, op=op, method=method, path=path, key=key, attempt=attempt,
                  round=self.load.round_no)
        hdrs = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        if key:
            hdrs["Idempotency-Key"] = key
        entry = self.conns.pop(inst, None)
        rec.t0 = now()
        if entry is not None and rec.t0 - entry[1] > 1.0:  # actix closes idle ones after 5 s
            entry[0].close()
            entry = None
        try:
            c = entry[0] if entry else http.client.HTTPConnection(*self.load.bases[inst], timeout=HTTP_TIMEOUT)
            c.request(method, path, body=data, headers=hdrs)
            resp = c.getresponse()
            rec.data = resp.read()
        except Exception as e:  # noqa: BLE001 - no answer is an observation
            rec.t1 = now()
            rec.err = type(e).__name__
            try:
                c.close()
            except Exception:  # noqa: BLE001
                pass
            self.m.add(rec)
            return rec
        rec.t1 = now()
        rec.status = resp.status
        rec.ctype = resp.getheader("content-type")
        rec.retry_after = resp.getheader("retry-after")
        rec.replayed = resp.getheader("idempotent-replayed")
        if not resp.will_close:
            self.conns[inst] = (c, rec.t1)
        else:
            c.close()
        self.m.add(rec)
        return rec

    def until_definite(self, op, method, path, body=None, headers=None, key=None, raw=None, retry_409=()):
        """Sends until an answer that is neither a 5xx nor missing (nor a 409 in `retry_409`);
        returns (last record, attempts)."""
        t_first = now()
        attempt = 0
        while True:
            attempt += 1
            r = self.request(op, method, path, body, headers, key, attempt, raw)
            maybe = r.err or r.status >= 500 or (r.status == 409 and r.slug() in retry_409)
            if not maybe:
                return r, attempt
            if now() - t_first > RETRY_FOR:
                with self.m.lock:
                    self.m.gave_up.append(r)
                return r, attempt
            time.sleep(RETRY_SLEEP)

    def keyed(self, kind, op, path, body, want, headers=None):
        key = f"{self.prefix}-{op}-{self.m.next()}"
        r, attempts = self.until_definite(op, "POST", path, body, headers, key=key,
                                          retry_409=("request-in-progress",))
        acked = r.status == want
        with self.m.lock:
            self.m.keys[key] = (kind, acked, attempts > 1, r.replayed == "true")
        if r.replayed == "true" and attempts == 1:
            self.m.bad(r, "replayed on the first use of its key")
        return r, key

    # --- writes

    def setup(self):
        r, _ = self.keyed("user", "user", "/users", {"name": f"{self.prefix} user"}, 201)
        d = r.json() or {}
        if r.status != 201 or not isinstance(d.get("id"), int):
            raise RuntimeError(f"could not create the user: {r.outcome()} {r.data!r}")
        self.uid = d["id"]
        self.m.ack("user", d["id"], d.get("name"), r)
        for k in range(2):
            acct = f"{self.prefix}-a{k}"
            r, _ = self.keyed("account", "open", "/accounts", {"account_id": acct, "owner": self.prefix}, 201)
            d = r.json() or {}
            if r.status != 201 or d.get("sequence") != 1:
                raise RuntimeError(f"could not open {acct}: {r.outcome()} {r.data!r}")
            self.ack_event(d, r)
            self.accounts.append(acct)

    def ack_event(self, d, r):
        self.m.ack("event", d.get("id"), (d.get("aggregate_id"), d.get("sequence"), d.get("event_type"),
                                          canon(d.get("payload"))), r)
        self.m.ack("seq", (d.get("aggregate_id"), d.get("sequence")),
                   (d.get("id"), d.get("event_type"), canon(d.get("payload"))), r)

    def op_note(self):
        n = self.m.next()
        title = f"{self.prefix} note {n}"
        body = f"{title} " + "lorem ipsum " * self.rng.randint(0, 8)
        r, key = self.keyed("note", "note", "/notes", {"title": title, "body": body}, 201)
        if r.status == 201:
            d = r.json() or {}
            if (d.get("title"), d.get("body")) != (title, body) or not isinstance(d.get("id"), int):
                return self.m.bad(r, "the answer is not the created note")
            self.m.ack("note", d["id"], (title, body), r)
        elif not (r.err or r.status >= 500):
            self.m.bad(r, "unexpected answer")

    def op_append(self):
        acct = self.rng.choice(self.accounts)
        withdraw = self.rng.random() < 0.25
        ty = "MoneyWithdrawn" if withdraw else "MoneyDeposited"
        amount = self.rng.randint(1, 400 if withdraw else 1000)
        n = self.m.next()
        payload = {"amount_cents": amount, "ref": f"{self.prefix}-e{n}"}
        r, key = self.keyed("event", "append", f"/accounts/{acct}/events",
                            {"event_type": ty, "payload": payload}, 201)
        if r.status == 201:
            d = r.json() or {}
            if (d.get("aggregate_id"), d.get("event_type"), d.get("payload")) != (acct, ty, payload) \
                    or not isinstance(d.get("sequence"), int):
                return self.m.bad(r, "the answer is not the appended event")
            self.ack_event(d, r)
        elif withdraw and r.status == 422 and r.slug() == "insufficient-funds":
            pass
        elif not (r.err or r.status >= 500):
            self.m.bad(r, "unexpected answer")

    def op_webhook(self):
        n = self.m.next()
        body = json.dumps({"event_type": "ha.test", "data": {"ref": f"{self.prefix}-h{n}", "n": n}},
                          separators=(",", ":")).encode()
        t = int(time.time())
        sig = hmac.new(CFG.secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
        key = f"{self.prefix}-h{n}"
        # The same delivery, header and all, until it is answered: a replay is stored once.
        r, attempts = self.until_definite("webhook", "POST", "/webhook",
                                          headers={"X-Webhook-Signature": f"t={t},v1={sig}",
                                                   "Content-Type": "application/json"}, raw=body)
        with self.m.lock:
            self.m.keys[key] = ("webhook", r.status == 202, attempts > 1, False)
        if r.status == 202:
            d = r.json() or {}
            if d.get("status") != "accepted" or not isinstance(d.get("id"), int):
                return self.m.bad(r, "the answer is not an accepted delivery")
            self.m.ack("webhook", d["id"], body.decode(), r)
        elif not (r.err or r.status >= 500):
            self.m.bad(r, "unexpected answer")

    def op_issue(self):
        label = f"{self.prefix} token {self.m.next()}"
        # No Idempotency-Key on token issue (the raw token is never stored): one attempt.
        r = self.request("issue", "POST", f"/users/{self.uid}/tokens", {"scope": "write", "label": label},
                         {"X-User-Id": str(self.uid)})
        if r.status == 201:
            d = r.json() or {}
            if (d.get("user_id"), d.get("scope"), d.get("label")) != (self.uid, "write", label) \
                    or not isinstance(d.get("id"), int) or len(d.get("token") or "") != 64:
                return self.m.bad(r, "the answer is not the issued token")
            self.m.ack("token", d["id"], (self.uid, "write", label), r)
            self.tokens.append(d["id"])
        elif r.err or r.status >= 500:
            with self.m.lock:
                self.m.unacked_labels.add(label)
        else:
            self.m.bad(r, "unexpected answer")

    def op_revoke(self):
        if not self.tokens:
            return self.op_issue()
        tid = self.tokens.pop(self.rng.randrange(len(self.tokens)))
        r, attempts = self.until_definite("revoke", "DELETE", f"/users/{self.uid}/tokens/{tid}",
                                          headers={"X-User-Id": str(self.uid)})
        if r.status == 204 or (r.status == 409 and attempts > 1 and r.slug() == "error: token already revoked"):
            # A 409 after a refused attempt: that attempt was applied after all.
            with self.m.lock:
                self.m.revoked[tid] = r
        elif not (r.err or r.status >= 500):
            self.m.bad(r, "unexpected answer")

    def step(self):
        route = ROUTES[self.idx % len(ROUTES)]
        if route == "token":
            if len(self.tokens) >= 10 or (len(self.tokens) >= 3 and self.rng.random() < 0.5):
                return self.op_revoke()
            return self.op_issue()
        getattr(self, "op_" + route)()

    def close(self):
        for c, _ in self.conns.values():
            c.close()


class Load:
    def __init__(self, model, bases, round_no):
        self.model, self.bases, self.round_no = model, bases, round_no
        self.stop_ev = threading.Event()
        self.threads = []
        self.errors = []
        self.ready = threading.Barrier(CFG.threads + 1)

    def start(self):
        for i in range(CFG.threads):
            t = threading.Thread(target=self.run, args=(Worker(self, i),), daemon=True)
            self.threads.append(t)
            t.start()
        self.ready.wait(120)
        return self

    def run(self, w):
        try:
            try:
                w.setup()
            finally:
                self.ready.wait(120)
            while not self.stop_ev.is_set():
                w.step()
        except Exception:  # noqa: BLE001
            self.errors.append(traceback.format_exc())
            log(f"  client thread {w.idx} failed:\n{self.errors[-1]}")
        finally:
            w.close()

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(RETRY_FOR + 2 * HTTP_TIMEOUT)


# --------------------------------------------------------------------------------------------
# Faults: each returns once the fault is removed (a stopped node is started again)


class Fault:
    def __init__(self, kind, number, round_no, instances):
        self.kind, self.number, self.round_no, self.instances = kind, number, round_no, instances
        self.t0 = self.t_removed = self.t_settled = self.t_end = None
        self.notes = []
        self.failed = []

    def note(self, msg):
        self.notes.append(msg)
        log(f"  {msg}")


def f_switchover(cluster, fault):
    members = cluster.status()
    leader, sync = Cluster.role(members, "leader"), Cluster.role(members, "sync_standby")
    fault.t0 = now()
    st, body = http_json(f"{cluster.by_name[leader].rest}/switchover", "POST",
                         {"leader": leader, "candidate": sync}, timeout=90)
    fault.t_removed = now()
    fault.note(f"switchover {leader} → {sync}: {st} {str(body).strip()[:80]} ({fault.t_removed - fault.t0:.1f}s)")
    if st != 200:
        fault.failed.append(f"the switchover was refused: {st} {body}")


def f_kill(cluster, fault):
    leader = cluster.leader()
    node = cluster.by_name[leader]
    fault.t0 = now()
    pids = node.kill9()
    fault.note(f"kill -9 of {leader}: Patroni and {len(pids)} PostgreSQL processes")
    new = cluster.wait_leader(leader, CFG.ttl + 60)
    fault.note(f"new leader {new} after {now() - fault.t0:.1f}s")
    time.sleep(2)
    node.start()
    fault.t_removed = now()


def f_stop_primary(cluster, fault):
    leader = cluster.leader()
    node = cluster.by_name[leader]
    fault.t0 = now()
    node.stop()
    fault.note(f"{leader} stopped (SIGTERM to Patroni) in {now() - fault.t0:.1f}s")
    new = cluster.wait_leader(leader, CFG.ttl + 60)
    fault.note(f"new leader {new} after {now() - fault.t0:.1f}s")
    time.sleep(2)
    node.start()
    fault.t_removed = now()


def f_stop_sync(cluster, fault):
    members = cluster.status()
    sync = Cluster.role(members, "sync_standby")
    node = cluster.by_name[sync]
    fault.t0 = now()
    node.stop()
    fault.note(f"synchronous standby {sync} stopped in {now() - fault.t0:.1f}s")
    other = cluster.wait_sync_not(sync, CFG.ttl + 60)
    fault.note(f"{other} synchronous after {now() - fault.t0:.1f}s")
    time.sleep(2)
    node.start()
    fault.t_removed = now()


def f_freeze(cluster, fault):
    leader = cluster.leader()
    node = cluster.by_name[leader]
    cluster.suspect.add(leader)
    fault.t0 = now()
    try:
        count = node.freeze()
        fault.note(f"{leader} frozen: SIGSTOP to {count} PostgreSQL processes")
        new = cluster.wait_leader(leader, CFG.freeze_s)
        if not new:
            fault.note(f"no failover during the freeze: {leader} kept the leader key")
        else:
            fault.note(f"new leader {new} after {now() - fault.t0:.1f}s")
            time.sleep(2)
            fault.note(f"a new connection with the service's DATABASE_URL reaches port "
                       f"{fresh_connection(CFG.db_url)}")
        time.sleep(max(0.0, fault.t0 + CFG.freeze_s - 1 - now()))
        fault.note(f"the servers' connections at {now() - fault.t0:.0f}s: {service_connections(cluster)}")
        time.sleep(max(0.0, fault.t0 + CFG.freeze_s - now()))
    finally:
        node.thaw()
        fault.t_removed = now()
        cluster.suspect.discard(leader)
    fault.note(f"SIGCONT after {fault.t_removed - fault.t0:.1f}s")


def f_blackhole(cluster, fault):
    leader = cluster.leader()
    relay = cluster.by_name[leader].relay
    fault.t0 = now()
    relay.block()
    try:
        fault.note(f"{leader}'s port (relay {relay.port}) blackholed")
        time.sleep(max(0.0, fault.t0 + CFG.blackhole_s - 1 - now()))
        fault.note(f"the servers' connections at {now() - fault.t0:.0f}s: {service_connections(cluster)}")
        time.sleep(max(0.0, fault.t0 + CFG.blackhole_s - now()))
    finally:
        relay.unblock()
        fault.t_removed = now()
    fault.note(f"forwarding again after {fault.t_removed - fault.t0:.1f}s")


FAULTS = {"switchover": f_switchover, "kill": f_kill, "stop-primary": f_stop_primary,
          "stop-sync": f_stop_sync, "freeze": f_freeze, "blackhole": f_blackhole}


def bound(kind):
    """The longest time without a successful write that a fault may cause, in seconds."""
    ttl = CFG.ttl
    return {
        "switchover": 10.0,
        "kill": ttl + 10.0,
        "stop-primary": 10.0,
        "stop-sync": 10.0,
        "freeze": ttl + 10.0,
        "blackhole": CFG.blackhole_s + 5.0,
    }[kind]


BOUND_TEXT = {
    "switchover": "10 s",
    "kill": "ttl + 10 s",
    "stop-primary": "10 s",
    "stop-sync": "10 s",
    "freeze": "ttl + 10 s",
    "blackhole": "blackhole + 5 s",
}


def schedule(spec):
    """Faults in rotation (one of each kind in turn) until every kind has run its count."""
    left = dict(spec)
    out = []
    while any(left.values()):
        for kind, _ in spec:
            if left[kind]:
                out.append(kind)
                left[kind] -= 1
    return out


# --------------------------------------------------------------------------------------------
# Verification on the final primary


def pg_rows(url, sql):
    out = psql(url, f"SELECT row_to_json(x)::text FROM ({sql}) x", timeout=120)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def verify(model, url):
    """Reads everything back from `url` (the final primary, direct). Returns (lost, dups,
    key_problems, stats): lists of (record, text) and a Counter."""
    notes = {r["id"]: r for r in pg_rows(url, "SELECT id, title, body FROM notes")}
    users = {r["id"]: r for r in pg_rows(url, "SELECT id, name FROM users")}
    tokens = {r["id"]: r for r in pg_rows(url, "SELECT id, user_id, scope, label, revoked_at FROM tokens")}
    events = pg_rows(url, "SELECT id, aggregate_id, sequence, event_type, payload FROM account_events")
    hooks = {r["id"]: r for r in pg_rows(url, "SELECT id, payload FROM webhook_events")}
    by_seq = {(e["aggregate_id"], e["sequence"]): e for e in events}
    by_id = {e["id"]: e for e in events}
    lost, dups, key_problems = [], [], []
    stats = Counter()

    def payload(e):
        try:
            return canon(json.loads(e["payload"]))
        except ValueError:
            return e["payload"]

    answered = defaultdict(dict)  # (kind, ident) -> content -> first record with it
    for kind, ident, content, rec in model.acks:
        seen = answered[(kind, ident)]
        if content not in seen:
            if seen:
                c0, r0 = next(iter(seen.items()))
                dups.append((rec, f"{kind} {ident} answered as {str(c0)[:100]} (request {r0.n}) "
                                  f"and as {str(content)[:100]} (request {rec.n})"))
            seen[content] = rec
        stats[f"{kind} answers"] += 1
        if kind == "note":
            row = notes.get(ident)
            ok = row is not None and (row["title"], row["body"]) == content
        elif kind == "user":
            row = users.get(ident)
            ok = row is not None and row["name"] == content
        elif kind == "token":
            row = tokens.get(ident)
            ok = row is not None and (row["user_id"], row["scope"], row["label"]) == content
        elif kind == "webhook":
            row = hooks.get(ident)
            ok = row is not None and row["payload"] == content
        elif kind == "event":
            row = by_id.get(ident)
            ok = row is not None and (row["aggregate_id"], row["sequence"], row["event_type"], payload(row)) == content
        elif kind == "seq":
            row = by_seq.get(ident)
            ok = row is not None and (row["id"], row["event_type"], payload(row)) == content
        else:
            ok = False
        if not ok:
            lost.append((rec, f"{kind} {ident}: acknowledged {str(content)[:120]}, stored {str(row)[:160]}"))
    for tid, rec in model.revoked.items():
        stats["revokes"] += 1
        row = tokens.get(tid)
        if row is None or not row["revoked_at"]:
            lost.append((rec, f"token {tid}: revoke acknowledged, stored {row}"))

    # Keys: every keyed create (and every webhook delivery) stored at most once, exactly once
    # when it was acknowledged.
    stored = Counter()
    for r in notes.values():
        stored[("note", r["title"])] += 1
    for e in events:
        try:
            ref = json.loads(e["payload"]).get("ref")
        except (ValueError, AttributeError):
            ref = None
        if ref:
            stored[("event", ref)] += 1
    for r in hooks.values():
        try:
            ref = json.loads(r["payload"])["data"]["ref"]
        except (ValueError, KeyError, TypeError):
            ref = None
        stored[("webhook", ref)] += 1
    for r in tokens.values():
        stored[("label", r["label"])] += 1
    key_content = {}
    for kind, ident, content, rec in model.acks:
        if kind == "note":
            key_content[rec.key] = ("note", content[0])
        elif kind == "event" and rec.key:
            body = json.loads(content[3])
            if isinstance(body, dict) and body.get("ref"):
                key_content[rec.key] = ("event", body["ref"])
    retried = replayed = 0
    for key, (kind, acked, was_retried, was_replayed) in model.keys.items():
        retried += was_retried
        replayed += was_replayed
        if kind not in ("note", "event", "webhook"):
            continue
        if kind == "webhook":
            handle = ("webhook", key)
        else:
            handle = key_content.get(key)
            if handle is None:
                continue  # never acknowledged: found below by its content, if stored
        n = stored.get(handle, 0)
        if n > 1 or (acked and n != 1):
            key_problems.append((key, f"{kind} key {key}: stored {n} times (acknowledged: {acked})"))
    for (kind, ident), n in stored.items():
        if n > 1 and ident and str(ident).startswith(f"ha{CFG.run_id}"):
            key_problems.append((ident, f"{kind} {ident!r} stored {n} times"))
    for label in model.unacked_labels:
        if stored.get(("label", label), 0) > 1:
            key_problems.append((label, f"token {label!r} stored more than once"))
    stats["retried keys"] = retried
    stats["replayed"] = replayed
    stats["rows"] = len(notes) + len(users) + len(tokens) + len(events) + len(hooks)
    stats["notes"], stats["events"], stats["webhooks"], stats["tokens"] = len(notes), len(events), len(hooks), len(tokens)
    stats["unacked issues stored"] = sum(1 for lab in model.unacked_labels if stored.get(("label", lab)))
    stats["unacked issues"] = len(model.unacked_labels)
    return lost, dups, key_problems, stats


def ledger_check(url):
    p = subprocess.run([CFG.bin, "ledger-check"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "DATABASE_URL": url, "RUST_LOG": "warn"})
    out = (p.stdout + p.stderr).strip().splitlines()
    return p.returncode, (out[-1] if out else "")


# --------------------------------------------------------------------------------------------
# Measures per fault


def window_of(faults, t):
    """The fault whose window holds time t (None: before the first fault of its round)."""
    hit = None
    for f in faults:
        if f.t0 <= t < f.t_end:
            hit = f
    return hit


def is_domain(rec):
    """An answer the load provokes on purpose, not a failure."""
    return (rec.status == 422 and rec.slug() == "insufficient-funds") or \
        (rec.status == 409 and rec.op == "revoke" and rec.attempt > 1)


def failures_of(recs):
    return [r for r in recs if not r.ok and not is_domain(r)]


def measure(fault, recs):
    """(first, {route: stall}) of one fault: the time from the fault to the first successful
    write sent after it began, and per route the longest time without a successful write from
    the fault to the end of its window (the next fault)."""
    oks = [r for r in recs if r.ok and r.t0 >= fault.t0 and r.t1 <= fault.t_end and r.op in ROUTE_OF]
    first = min((r.t1 for r in oks), default=fault.t_end) - fault.t0
    stalls = {}
    for route in ROUTES:
        points = [fault.t0] + sorted(r.t1 for r in oks if ROUTE_OF[r.op] == route) + [fault.t_end]
        stalls[route] = max(b - a for a, b in zip(points, points[1:]))
    return first, stalls


def row_for(label, instances, kind, faults, recs, lost, dups):
    fails = failures_of(recs)
    wrong = [r for r in fails if not r.problem_503() or r.latency >= ANSWER_BOUND]
    fives = [r for r in recs if r.status == 500]
    noans = [r for r in recs if r.err]
    firsts, stalls = [], defaultdict(float)
    for f in faults:
        first, per_route = measure(f, [r for r in recs if f.t0 <= r.t0 < f.t_end])
        firsts.append(first)
        for route, x in per_route.items():
            stalls[route] = max(stalls[route], x)
    b = bound(kind) if faults else None
    over = [route for route in ROUTES if b is not None and stalls[route] > b]
    retried = sum(1 for r in recs if r.attempt == 2)
    applied = sum(1 for r in recs if r.attempt and r.attempt > 1
                  and (r.replayed == "true" or (r.op == "revoke" and r.status == 409)))
    problems = []
    if over:
        problems.append(f"{', '.join(over)} stalled {max(stalls[x] for x in over):.1f}s > {b:.0f}s")
    if wrong:
        problems.append(f"{len(wrong)} failures not 503 problems with Retry-After within {ANSWER_BOUND}s: "
                        f"{Counter(r.outcome() for r in wrong).most_common(3)}")
    if fives:
        problems.append(f"{len(fives)} × 500")
    if noans:
        problems.append(f"{len(noans)} without answer")
    if lost:
        problems.append(f"{len(lost)} lost")
    if dups:
        problems.append(f"{len(dups)} duplicates")
    if any(f.failed for f in faults):
        problems.append("; ".join(x for f in faults for x in f.failed))
    slowest = max((r.latency for r in fails if not r.err), default=None)
    kinds = Counter(r.outcome() for r in fails)
    row = [
        str(instances), label, str(len(faults)) if faults else "—",
        f"{max(firsts):.1f} s" if firsts else "—",
        (" / ".join(f"{stalls[x]:.1f}" for x in ROUTES) + f" s (≤ {b:.0f} s)") if faults else "—",
        str(len(recs)),
        f"{len(fails)}" + (f" ({kinds.most_common(1)[0][0]}" + (" …" if len(kinds) > 1 else "") + ")" if fails else ""),
        "yes" if not wrong else f"no ({len(wrong)})",
        f"{slowest:.2f} s" if slowest is not None else "—",
        str(len(fives)), str(len(noans)), str(len(lost)), str(len(dups)),
        f"{retried} ({applied})",
        "PASS" if not problems else "FAIL: " + "; ".join(problems),
    ]
    return row, problems


HEAD = ["Instances", "Fault", "Count", "First write after", "Longest write stall: note / append / webhook / token (bound)",
        "Requests", "Failures", "All 503 problems with Retry-After < 2.5 s", "Slowest failure", "500s",
        "No answer", "Lost acked writes", "Duplicates", "Retried (had been applied)", "Result"]


# --------------------------------------------------------------------------------------------
# Runner


class Config:
    def __init__(self, args):
        self.bin = os.path.abspath(args.bin)
        self.work = os.path.abspath(args.work)
        self.run_id = args.run_id or os.getpid()
        self.procs = Procs(os.path.join(self.work, "pids"))
        self.threads = int(os.environ.get("HA_THREADS", "4"))
        self.ttl = int(os.environ.get("HA_TTL", "10"))
        self.loop_wait = int(os.environ.get("HA_LOOP_WAIT", "1"))
        self.retry_timeout = int(os.environ.get("HA_RETRY_TIMEOUT", "4"))
        self.freeze_s = float(os.environ.get("HA_FREEZE_S", "30"))
        self.blackhole_s = float(os.environ.get("HA_BLACKHOLE_S", "15"))
        self.gap_s = float(os.environ.get("HA_GAP_S", "3"))
        self.seed = os.environ.get("HA_SEED", str(self.run_id))
        self.secret = "whsec_ha_" + hashlib.sha256(f"{self.run_id}-{time.time()}".encode()).hexdigest()[:40]
        self.pg_user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        self.etcd = None
        self.nodes = []
        self.db_url = None


def parse_spec(items):
    spec = []
    for item in items:
        for part in filter(None, item.replace(",", " ").split()):
            name, _, count = part.partition(":")
            if name not in FAULTS:
                raise SystemExit(f"unknown fault {name!r}; known: {', '.join(FAULTS)}")
            spec.append((name, int(count or 1)))
    return spec


def terminated(signum, frame):
    raise KeyboardInterrupt


def main():
    global CFG
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--run-id", default="")
    ap.add_argument("--short", action="store_true", help="one switchover, one kill -9, one freeze")
    ap.add_argument("--instances", default=os.environ.get("HA_INSTANCES"),
                    help="server processes per round, e.g. 1,3 (default: 1,3; with --short: 3)")
    ap.add_argument("faults", nargs="*", help="FAULT[:COUNT] (default: HA_RUNS, else the full list)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, terminated)
    CFG = Config(args)
    os.chmod(CFG.work, 0o711)  # the postgres OS user must reach its node directories
    if args.faults:
        spec = parse_spec(args.faults)
    elif args.short:
        spec = SHORT
    elif os.environ.get("HA_RUNS"):
        spec = parse_spec([os.environ["HA_RUNS"]])
    else:
        spec = FULL
    rounds = [int(x) for x in (args.instances or ("3" if args.short else "1,3")).split(",")]
    plan = schedule(spec)
    log(f"HA test: {len(plan)} faults per round ({', '.join(f'{k} ×{n}' for k, n in spec)}), rounds with "
        f"{' then '.join(map(str, rounds))} server instance(s), {CFG.threads} client threads; "
        f"binary {CFG.bin}; work directory {CFG.work}")
    become_subreaper()
    t_start = now()
    status = 1
    try:
        status = run(plan, rounds)
    except KeyboardInterrupt:
        log("interrupted")
        status = 130
    finally:
        for n in CFG.nodes:
            try:
                n.cleanup()
            except Exception as e:  # noqa: BLE001
                log(f"(cleanup of {n.name}: {e})")
        if CFG.etcd:
            CFG.etcd.stop()
    log(f"total {now() - t_start:.0f}s")
    return status


def run(plan, rounds):
    cluster = start_stack(CFG.work)
    migrate(cluster)
    model = Model()
    all_faults, round_info, failures = [], [], []
    for round_no, count in enumerate(rounds, 1):
        log(f"== round {round_no}: {count} server instance(s)")
        servers = Servers(count, round_no, cluster)
        servers.start()
        log(f"servers {[p.pid for p in servers.procs]} on {[b[1] for b in servers.bases]}; "
            f"DATABASE_URL={servers.db_url}")
        load = Load(model, servers.bases, round_no)
        t_load = now()
        load.start()
        log(f"{CFG.threads} client threads set up in {now() - t_load:.1f}s")
        faults = []
        aborted = None
        try:
            time.sleep(CFG.gap_s)
            for i, kind in enumerate(plan, 1):
                leader = cluster.wait_settled()
                if faults:
                    faults[-1].t_settled = now()
                time.sleep(CFG.gap_s)
                fault = Fault(kind, i, round_no, count)
                fault.t_end = float("inf")
                log(f"-- {kind} ({i}/{len(plan)}), leader {leader}")
                faults.append(fault)
                FAULTS[kind](cluster, fault)
                if len(faults) > 1:
                    faults[-2].t_end = fault.t0
            cluster.wait_settled()
            if faults:
                faults[-1].t_settled = now()
            time.sleep(CFG.gap_s)
        except Settle as e:
            aborted = str(e)
            log(f"  FAIL: {aborted}")
            failures.append(aborted)
            for n in cluster.nodes:
                log(f"  last lines of {n.log_path}:\n{log_tail(n.log_path, 15)}")
        load.stop()
        if faults:
            faults[-1].t_end = now()
        changed = servers.unchanged()
        if changed:
            failures.append(f"round {round_no}: not the same server processes at the end: {changed}")
        if load.errors:
            failures.append(f"round {round_no}: {len(load.errors)} client threads failed")
        servers.stop()
        panics = sum(scan_log(p)[0] for p in servers.logs)
        errors = sum(scan_log(p)[1] for p in servers.logs)
        if panics:
            failures.append(f"round {round_no}: the server logs show {panics} panics")
        log(f"round {round_no}: {sum(1 for r in model.recs if r.round == round_no)} requests; servers the "
            f"same processes throughout: {'yes' if not changed else 'NO'}; {errors} ERROR log lines, {panics} panics")
        round_info.append((round_no, count, t_load, faults, servers, changed))
        all_faults += faults
        if aborted:
            break

    log("== verification on the final primary")
    leader = cluster.wait_settled()
    url = cluster.by_name[leader].url()
    lost, dups, key_problems, stats = verify(model, url)
    rc, line = ledger_check(url)
    log(f"final primary {leader}: {stats['rows']} rows read ({stats['notes']} notes, {stats['events']} events, "
        f"{stats['webhooks']} webhook deliveries, {stats['tokens']} tokens); ledger-check exit {rc}: {line}")
    if rc != 0:
        failures.append(f"ledger-check exited {rc}: {line}")
    for rec, text in lost[:10]:
        log(f"  LOST: {text} (answered at +{rec.t1 - t_first(model):.1f}s, request {rec.n})")
    for rec, text in dups[:10]:
        log(f"  DUPLICATE: {text}")
    for _, text in key_problems[:10]:
        log(f"  KEY: {text}")
    if lost:
        failures.append(f"{len(lost)} acknowledged writes lost or changed")
    if dups:
        failures.append(f"{len(dups)} ids answered twice with different content")
    if key_problems:
        failures.append(f"{len(key_problems)} keys stored more than once or not at all")
    unexpected = model.unexpected
    for rec, why in unexpected[:10]:
        log(f"  UNEXPECTED: {rec.method} {rec.path} → {rec.outcome()} {rec.data[:200]!r}: {why}")
    if unexpected:
        failures.append(f"{len(unexpected)} unexpected answers")
    if model.gave_up:
        failures.append(f"{len(model.gave_up)} writes still failing after {RETRY_FOR:.0f}s of retries")
    log(f"keyed writes: {len(model.keys)}, {stats['retried keys']} sent more than once, {stats['replayed']} of them "
        f"answered by a replay (applied by an attempt that had failed); token issues without an answer: "
        f"{stats['unacked issues']} ({stats['unacked issues stored']} stored)")

    # The table: one row per round and fault kind, plus the steady load before the first fault.
    rows = []
    for round_no, count, t_load, faults, servers, changed in round_info:
        recs = [r for r in model.recs if r.round == round_no]
        first_t0 = faults[0].t0 if faults else float("inf")
        steady = [r for r in recs if r.t0 < first_t0]
        lost_r = [x for x in lost if x[0].round == round_no]
        dups_r = [x for x in dups if x[0].round == round_no]
        row, probs = row_for("none (steady load)", count, None, [], steady,
                             [x for x in lost_r if x[0].t1 < first_t0], [x for x in dups_r if x[0].t1 < first_t0])
        rows.append(row)
        failures += [f"round {round_no}, steady load: {p}" for p in probs]
        for kind in dict.fromkeys(f.kind for f in faults):
            fs = [f for f in faults if f.kind == kind]
            recs_k = [r for r in recs if window_of(faults, r.t0) in fs]
            lost_k = [x for x in lost_r if window_of(faults, x[0].t1) in fs]
            dups_k = [x for x in dups_r if window_of(faults, x[0].t1) in fs]
            row, probs = row_for(kind, count, kind, fs, recs_k, lost_k, dups_k)
            rows.append(row)
            failures += [f"round {round_no}, {kind}: {p}" for p in probs]
    all_lost = len(lost)
    md = md_table(HEAD, rows)
    total_recs = len(model.recs)
    md += ["", f"{total_recs} requests in all; {stats['rows']} rows read back from the final primary ({leader}); "
           f"lost acknowledged writes {all_lost}; ids answered twice with different content {len(dups)}; "
           f"`ledger-check` exit {rc} ({line}); same server processes throughout: "
           f"{'yes' if not any(c for *_, c in round_info) else 'no'}. Writes sent again after a 503: "
           f"{sum(1 for r in model.recs if r.attempt == 2)}, of which "
           f"{sum(1 for r in model.recs if (r.attempt or 0) > 1 and (r.replayed == 'true' or (r.op == 'revoke' and r.status == 409)))} "
           f"had been applied by the refused attempt (a replay, or 409 for a second revoke); token issues "
           f"answered 503: {stats['unacked issues']}, of which {stats['unacked issues stored']} were stored."]
    print("\n" + "\n".join(md), flush=True)
    with open(os.path.join(CFG.work, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    if os.environ.get("HA_REPORT"):
        with open(os.environ["HA_REPORT"], "w") as f:
            f.write("\n".join(md) + "\n")
    dump(model, all_faults)
    if failures:
        log(f"\nHA test FAILED ({len(failures)}):")
        for x in failures[:40]:
            log(f"  - {x}")
        return 1
    log("\nHA test passed: every criterion held")
    return 0


def t_first(model):
    return model.recs[0].t0 if model.recs else 0.0


def dump(model, faults):
    """Every request and answer, and every fault, as JSON lines (times from the first request)."""
    base = t_first(model)
    path = os.path.join(CFG.work, "records.jsonl")
    with open(path, "w") as f:
        for r in model.recs:
            f.write(json.dumps({
                "n": r.n, "round": r.round, "thread": r.thread, "instance": r.inst, "op": r.op,
                "method": r.method, "path": r.path, "key": r.key, "attempt": r.attempt,
                "t0": round(r.t0 - base, 4), "latency": round(r.latency, 4), "status": r.status,
                "err": r.err, "retry_after": r.retry_after, "replayed": r.replayed,
                "body": (r.data or b"").decode(errors="replace")[:2000],
            }) + "\n")
    with open(os.path.join(CFG.work, "faults.jsonl"), "w") as f:
        for x in faults:
            f.write(json.dumps({
                "round": x.round_no, "instances": x.instances, "kind": x.kind, "number": x.number,
                "at": time.strftime("%H:%M:%S", time.gmtime(time.time() - (now() - x.t0))) if x.t0 else None,
                "t0": round(x.t0 - base, 3) if x.t0 else None,
                "removed": round(x.t_removed - base, 3) if x.t_removed else None,
                "settled": round(x.t_settled - base, 3) if x.t_settled else None,
                "notes": x.notes, "failed": x.failed,
            }) + "\n")
    log(f"records: {path} ({len(model.recs)} requests), faults.jsonl, report.md")


if __name__ == "__main__":
    sys.exit(main())
