"""What following the accounts' events costs (issue 35): helpers for scripts/bench.sh.

  events.py sink PORT                      a webhook receiver answering 204 at once, until killed;
                                           prints how many deliveries it took
  events.py endpoints BASE SINK_URL N      registers N endpoints (the operator's: every account)
                                           and prints their ids
  events.py delete BASE ID...              deletes endpoints
  events.py streams BASE PREFIX N          opens N streams, one per account PREFIX-0..N-1, from
                                           each account's current end, and reads them until
                                           killed; prints how many events came
  events.py latency BASE DIR BACKEND [--seconds S] [--rate R]
                                           appends R events a second to a fresh account, one
                                           registered endpoint and one open stream following it;
                                           writes the time from each append's request to its
                                           arrival on the stream and at the endpoint (p50, p99)
                                           into DIR in wrk's latency format, a file per path

The receivers read and discard with one thread (selectors), so that they take as little of the
machine's two cores from the server as they can. The latency is an upper bound of commit to
delivery: it starts when the append is sent, before its commit.
"""
import http.client
import json
import selectors
import signal
import socket
import sys
import threading
import time
from urllib.parse import urlsplit


def call(base, method, path, body=None):
    u = urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"content-type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, (json.loads(data) if data else None)


def stop_on_term(report):
    def handler(*_):
        report()
        sys.exit(0)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def sink(port, on_delivery=None):
    """Answers every request with 204 on keep-alive connections. `on_delivery(body)` sees each."""
    sel = selectors.DefaultSelector()
    server = socket.create_server(("127.0.0.1", port), backlog=512)
    server.setblocking(False)
    sel.register(server, selectors.EVENT_READ)
    buffers = {}
    count = 0

    def serve():
        nonlocal count
        while True:
            for key, _ in sel.select():
                if key.fileobj is server:
                    conn, _ = server.accept()
                    conn.setblocking(False)
                    buffers[conn] = b""
                    sel.register(conn, selectors.EVENT_READ)
                    continue
                conn = key.fileobj
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    sel.unregister(conn)
                    buffers.pop(conn, None)
                    conn.close()
                    continue
                buf = buffers[conn] + chunk
                answers = 0
                while True:
                    head_end = buf.find(b"\r\n\r\n")
                    if head_end < 0:
                        break
                    length = 0
                    for line in buf[:head_end].split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value)
                    if len(buf) < head_end + 4 + length:
                        break
                    body = buf[head_end + 4:head_end + 4 + length]
                    buf = buf[head_end + 4 + length:]
                    count += 1
                    answers += 1
                    if on_delivery:
                        on_delivery(body)
                buffers[conn] = buf
                if answers:
                    conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n" * answers)

    return serve, lambda: count


def streams(base, prefix, n, on_event=None):
    """Opens n account streams from each account's current end; returns (read loop, count)."""
    u = urlsplit(base)
    sel = selectors.DefaultSelector()
    count = 0
    for i in range(n):
        account = f"{prefix}-{i}"
        _, acct = call(base, "GET", f"/accounts/{account}")
        after = acct.get("last_sequence", 0) if acct else 0
        s = socket.create_connection((u.hostname, u.port))
        s.sendall(f"GET /accounts/{account}/events/stream?after_sequence={after} HTTP/1.1\r\n"
                  f"Host: {u.hostname}\r\nAccept: text/event-stream\r\n\r\n".encode())
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, data=[b""])

    def read():
        nonlocal count
        while True:
            for key, _ in sel.select():
                try:
                    chunk = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                if on_event is None:
                    count += chunk.count(b"\ndata: ") + chunk.startswith(b"data: ")
                    continue
                buf = key.data[0] + chunk
                *events, key.data[0] = buf.split(b"\n\n")
                for event in events:
                    for line in event.split(b"\n"):
                        if line.startswith(b"data: "):
                            count += 1
                            on_event(line[6:])

    return read, lambda: count


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def write_wrk_like(path, route, latencies_ms, requests):
    """A file report.py reads like a wrk output: the route, a rate and the 50%/99% lines."""
    def fmt(ms):
        return f"{ms * 1000:.2f}us" if ms < 1 else f"{ms:.2f}ms"
    with open(path, "w") as f:
        f.write(f"# route: {route}\n")
        if latencies_ms:
            f.write(f"  Latency Distribution\n     50%   {fmt(percentile(latencies_ms, 50))}\n"
                    f"     99%   {fmt(percentile(latencies_ms, 99))}\n")
        f.write(f"Requests/sec: {requests:.2f}\n")
        f.write(f"Non-2xx or 3xx responses: {0 if latencies_ms else 1}\n")


def latency(base, out_dir, backend, seconds, rate, sink_port):
    account = f"lat-{int(time.time() * 1000)}"
    status, _ = call(base, "POST", "/accounts", {"account_id": account, "owner": "bench"})
    assert status == 201, status
    sent, on_stream, at_endpoint = {}, {}, {}

    def on_delivery(body):
        event = json.loads(body)["data"]
        if event["aggregate_id"] == account:
            at_endpoint.setdefault(event["sequence"], time.perf_counter())

    def on_event(data):
        event = json.loads(data)
        on_stream.setdefault(event["sequence"], time.perf_counter())

    serve, _ = sink(sink_port, on_delivery)
    threading.Thread(target=serve, daemon=True).start()
    status, endpoint = call(base, "POST", "/webhook-endpoints",
                            {"url": f"http://127.0.0.1:{sink_port}/hook"})
    assert status == 201, (status, endpoint)
    u = urlsplit(base)
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(f"GET /accounts/{account}/events/stream?after_sequence=1 HTTP/1.1\r\n"
              f"Host: {u.hostname}\r\nAccept: text/event-stream\r\n\r\n".encode())

    def read_stream():
        buf = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return
            buf += chunk
            *events, buf = buf.split(b"\n\n")
            for event in events:
                for line in event.split(b"\n"):
                    if line.startswith(b"data: "):
                        on_event(line[6:])

    threading.Thread(target=read_stream, daemon=True).start()
    time.sleep(0.5)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    body = json.dumps({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}})
    start = time.perf_counter()
    n = int(seconds * rate)
    for i in range(n):
        due = start + i / rate
        time.sleep(max(0.0, due - time.perf_counter()))
        t = time.perf_counter()
        conn.request("POST", f"/accounts/{account}/events", body=body,
                     headers={"content-type": "application/json"})
        r = conn.getresponse()
        answer = json.loads(r.read())
        assert r.status == 201, (r.status, answer)
        sent[answer["sequence"]] = t
    deadline = time.perf_counter() + 30
    while (len(on_stream) < n or len(at_endpoint) < n) and time.perf_counter() < deadline:
        time.sleep(0.05)
    call(base, "DELETE", f"/webhook-endpoints/{endpoint['id']}")
    stream_ms = [(on_stream[q] - t) * 1000 for q, t in sent.items() if q in on_stream]
    hook_ms = [(at_endpoint[q] - t) * 1000 for q, t in sent.items() if q in at_endpoint]
    stamp = time.time_ns()
    write_wrk_like(f"{out_dir}/{stamp}-sse__{backend}.txt", "events: append to SSE delivery",
                   stream_ms, rate)
    write_wrk_like(f"{out_dir}/{stamp}-webhook__{backend}.txt",
                   "events: append to webhook delivery", hook_ms, rate)
    for name, values in (("stream", stream_ms), ("webhook", hook_ms)):
        if len(values) < n:
            print(f"  {name}: only {len(values)} of {n} events arrived within 30 s")
        if values:
            print(f"  append to {name} delivery: p50 {percentile(values, 50):.2f} ms, "
                  f"p99 {percentile(values, 99):.2f} ms ({len(values)} events at {rate}/s)")


def main(argv):
    command = argv[1]
    if command == "sink":
        serve, count = sink(int(argv[2]))
        stop_on_term(lambda: print(f"  the receiver took {count()} deliveries"))
        serve()
    elif command == "endpoints":
        base, url, n = argv[2], argv[3], int(argv[4])
        for _ in range(n):
            status, endpoint = call(base, "POST", "/webhook-endpoints", {"url": url})
            assert status == 201, (status, endpoint)
            print(endpoint["id"])
    elif command == "delete":
        for endpoint in argv[3:]:
            call(argv[2], "DELETE", f"/webhook-endpoints/{endpoint}")
    elif command == "streams":
        read, count = streams(argv[2], argv[3], int(argv[4]))
        stop_on_term(lambda: print(f"  the streams carried {count()} events"))
        read()
    elif command == "latency":
        args = dict(zip(argv[5::2], argv[6::2]))
        latency(argv[2], argv[3], argv[4], float(args.get("--seconds", 5)), float(args.get("--rate", 200)),
                int(args.get("--sink-port", 0)) or free_port())
    else:
        sys.exit(__doc__)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main(sys.argv)
