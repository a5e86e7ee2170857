#!/usr/bin/env python3
"""A TCP relay in front of one PostgreSQL node, for scripts/ha_test.py (standard library only).

    relay.py LISTEN_PORT TARGET_PORT [TAG]

Forwards every connection to 127.0.0.1:LISTEN_PORT to 127.0.0.1:TARGET_PORT, and otherwise
behaves as the node's own port would:

- It listens only while the node does (checked every 20 ms in /proc/net/tcp), so a connection
  to a node that is down is refused, as it would be without the relay. (A relay that accepted
  and then closed would differ: libpq tries the next host of a multi-host URL after a refused
  connection, but gives up the whole attempt when a server closes the connection during the
  startup exchange.) A node frozen with SIGSTOP still listens: its connections are accepted by
  the kernel and then hang, with or without the relay.
- SIGUSR1 blackholes the node: from then on no byte is forwarded in either direction, open
  connections stay open (no FIN, no RST: their bytes wait in the relay and in the kernel's
  buffers), and new connections are accepted and held without reaching the node, as when a
  firewall drops packets. SIGUSR2 lifts it: held bytes and held connections go on.

SIGTERM exits. Prints "ready" once it has looked at the node. TAG is ignored; it puts the run's
work directory on the command line, so that a backstop cleanup can tell this relay from any
other process.
"""

import asyncio
import signal
import socket
import struct
import sys


def listening(port):
    """Whether something listens on TCP `port` (IPv4), from /proc/net/tcp, which lists the
    listening sockets first."""
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                fields = line.split()
                if fields[3] != "0A":
                    break
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    return True
    except OSError:
        pass
    return False


async def main(listen_port, target_port):
    flowing = asyncio.Event()
    flowing.set()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, flowing.clear)
    loop.add_signal_handler(signal.SIGUSR2, flowing.set)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)

    async def pump(reader, writer, other):
        try:
            while True:
                await flowing.wait()
                data = await reader.read(65536)
                if not data:
                    break
                # A blackhole that began while this read waited holds what it brought.
                await flowing.wait()
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            for w in (writer, other):
                w.close()

    async def handle(creader, cwriter):
        await flowing.wait()
        try:
            ureader, uwriter = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            # The node stopped listening since the last look: reset, the nearest to a refusal.
            sock = cwriter.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            cwriter.close()
            return
        await asyncio.gather(pump(creader, uwriter, cwriter), pump(ureader, cwriter, uwriter))

    server = None
    first = True
    while not stop.is_set():
        want = listening(target_port) or not flowing.is_set()
        if want and server is None:
            server = await asyncio.start_server(handle, "127.0.0.1", listen_port, backlog=256,
                                                reuse_address=True)
        elif not want and server is not None:
            server.close()  # stops accepting; connections already open go on
            server = None
        if first:
            print("ready", flush=True)
            first = False
        try:
            await asyncio.wait_for(stop.wait(), 0.02)
        except asyncio.TimeoutError:
            pass
    if server is not None:
        server.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
