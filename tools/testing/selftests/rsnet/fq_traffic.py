#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Traffic for the fq behaviour selftests.

  fq_traffic.py udp-send ADDR PORT COUNT SIZE [--socks K] [--prio P,...]
                [--ports N] [--for S] [--tos T] [--txtime-in NS] [--xstats DEV]
        COUNT datagrams of SIZE bytes on each of K connected UDP sockets,
        as fast as possible, for at most S seconds; socket i has the i-th
        priority of the list (cyclically) and sends to PORT + i % N (N = 1
        unless given); with --txtime-in, each carries an SO_TXTIME
        departure time NS nanoseconds from now (CLOCK_MONOTONIC). Prints
        "sent N" and, with --xstats, then the fq statistics of DEV (fq_nl.py
        xstats): fq counts its drops as it enqueues, so they are final when
        the last send returns.
  fq_traffic.py udp-recv ADDR PORT SECONDS [--ports N] [--skip S]
                [--ready FILE]
        counts datagrams, bytes and CE-marked ones on ports PORT to
        PORT + N - 1 for SECONDS, starting S seconds (default 0) after the
        first datagram (waiting at most 120 s for it); prints "packets N",
        "bytes N" and "ce N", a line each, then "port_bytes B0 B1 ...".
  fq_traffic.py tcp-sink ADDR PORT [--ready FILE]
        accepts TCP connections and discards what they send.

  --ready FILE: FILE is created once the socket is bound (listening), so a
  test starts its sender then, not after a guess of Python's start time.
  fq_traffic.py tcp-flows ADDR PORT SECONDS N [--prio P,P,...]
        N TCP connections sending for SECONDS (each with its SO_PRIORITY);
        prints "bytes N N ...": what each got acknowledged (sent less what
        is still in its send queue at the end).

Output is "name value" lines for the shell, and only what a command uses
is imported: each module costs a noticeable part of a second in the
emulated guest.
"""
import socket
import struct
import sys
import time

SO_TXTIME = 61
SCM_TXTIME = SO_TXTIME
CLOCK_MONOTONIC = 1


def udp_send(a):
    socks = []
    prios = [int(p) for p in a.prio.split(",")] if a.prio else None
    for i in range(a.socks):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if prios:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, prios[i % len(prios)])
        if a.tos is not None:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, a.tos)
        if a.txtime_in is not None:
            s.setsockopt(socket.SOL_SOCKET, SO_TXTIME, struct.pack("=iI", CLOCK_MONOTONIC, 0))
        s.connect((a.addr, a.port + i % (a.ports or 1)))
        socks.append(s)
    payload = b"x" * a.size
    sent = 0
    stop = time.monotonic() + a.for_ if a.for_ else None
    for _ in range(a.count):
        if stop and time.monotonic() > stop:
            break
        for s in socks:
            try:
                if a.txtime_in is not None:
                    t = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + a.txtime_in
                    s.sendmsg([payload], [(socket.SOL_SOCKET, SCM_TXTIME, struct.pack("=Q", t))])
                else:
                    s.send(payload)
                sent += 1
            except OSError:
                pass  # a drop reported to the sender (ENOBUFS) is fine
    print("sent", sent)
    if a.xstats:
        import fq_nl  # pylint: disable=import-outside-toplevel
        fq_nl.print_xstats(a.xstats)


def ready(a):
    if a.ready:
        open(a.ready, "w").close()


def udp_recv(a):
    import select  # pylint: disable=import-outside-toplevel
    socks = []
    for i in range(a.ports or 1):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        s.bind((a.addr, a.port + i))
        socks.append(s)
    ready(a)
    skip = a.skip or 0.0
    end = time.monotonic() + 120
    start = None
    pkts = nbytes = ce = 0
    port_bytes = [0] * len(socks)
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select(socks, [], [], left)
        now = time.monotonic()
        if r and start is None:
            start = now + skip
            end = start + a.seconds
        elif now >= end:
            break
        for s in r:
            data, anc, _, _ = s.recvmsg(65536, 64)
            if now < start:
                continue
            pkts += 1
            nbytes += len(data)
            port_bytes[socks.index(s)] += len(data)
            for level, typ, val in anc:
                if level == socket.IPPROTO_IP and typ == socket.IP_TOS and val and (val[0] & 3) == 3:
                    ce += 1
    print("packets", pkts)
    print("bytes", nbytes)
    print("ce", ce)
    print("port_bytes", *port_bytes)


def tcp_sink(a):
    import threading  # pylint: disable=import-outside-toplevel
    srv = socket.create_server((a.addr, a.port), reuse_port=False)
    srv.listen(64)
    ready(a)

    def drain(c):
        n = 0
        with c:
            while True:
                try:
                    d = c.recv(1 << 16)
                except OSError:  # the sender's reset
                    break
                if not d:
                    break
                n += len(d)

    while True:
        c, _ = srv.accept()
        threading.Thread(target=drain, args=(c,), daemon=True).start()


def tcp_flows(a):
    # pylint: disable=import-outside-toplevel
    import fcntl
    import termios
    import threading
    prios = [int(p) for p in a.prio.split(",")] if a.prio else [None] * a.n
    counts = [0] * a.n
    stop = time.monotonic() + a.seconds

    def run(i):
        s = socket.create_connection((a.addr, a.port))
        if prios[i] is not None:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, prios[i])
        # A blocked send() must not run on past the end.
        s.settimeout(0.2)
        buf = b"y" * 65536
        with s:
            while time.monotonic() < stop:
                try:
                    counts[i] += s.send(buf)
                except TimeoutError:
                    pass
            # Bytes still in the send queue (unsent or unacknowledged) were
            # not delivered: a flow the qdisc starves still fills its
            # socket buffer, so send()'s count alone hides the shares.
            outq = struct.unpack("i", fcntl.ioctl(s.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]
            counts[i] -= outq
            # Close with a reset: the queued bytes are dropped, not sent on
            # after the test. Behind the bottleneck they took seconds, and
            # their retransmissions, stamped by TCP's pacing far ahead,
            # reached the fq of the horizon checks that followed.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(a.n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("bytes", *counts)


class Args:
    """The parsed command line: positionals and --options as attributes."""


# command: (positionals with their types, {option: type}); an option's
# attribute is its name without "--" and with "_" for "-" ("for" -> for_).
COMMANDS = {
    "udp-send": ([("addr", str), ("port", int), ("count", int), ("size", int)],
                 {"--socks": int, "--prio": str, "--ports": int, "--tos": int,
                  "--txtime-in": int, "--for": float, "--xstats": str}),
    "udp-recv": ([("addr", str), ("port", int), ("seconds", float)],
                 {"--ports": int, "--skip": float, "--ready": str}),
    "tcp-sink": ([("addr", str), ("port", int)], {"--ready": str}),
    "tcp-flows": ([("addr", str), ("port", int), ("seconds", float), ("n", int)],
                  {"--prio": str}),
}


def parse(argv):
    """argparse's job for these few commands, without its import."""
    if not argv or argv[0] not in COMMANDS:
        raise SystemExit(__doc__)
    pos, opts = COMMANDS[argv[0]]
    a = Args()
    a.cmd = argv[0]
    for name in opts:
        setattr(a, name[2:].replace("-", "_") + ("_" if name == "--for" else ""), None)
    a.socks = 1 if a.cmd == "udp-send" else None
    rest = argv[1:]
    args = []
    while rest:
        w = rest.pop(0)
        if w in opts:
            if not rest:
                raise SystemExit(f"{w} needs a value")
            setattr(a, w[2:].replace("-", "_") + ("_" if w == "--for" else ""), opts[w](rest.pop(0)))
        elif w.startswith("--"):
            raise SystemExit(f"unknown option {w}\n{__doc__}")
        else:
            args.append(w)
    if len(args) != len(pos):
        raise SystemExit(__doc__)
    for (name, typ), w in zip(pos, args):
        setattr(a, name, typ(w))
    return a


def main():
    a = parse(sys.argv[1:])
    {"udp-send": udp_send, "udp-recv": udp_recv, "tcp-sink": tcp_sink,
     "tcp-flows": tcp_flows}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
