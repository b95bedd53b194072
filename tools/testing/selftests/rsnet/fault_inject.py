#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Systematic allocation-failure injection with /proc/thread-self/fail-nth.

Writing N to fail-nth makes the Nth fault-injection point this task passes
fail (failslab and fail_page_alloc, limited by their filters: see
fault_inject.sh); reading it back gives 0 once the failure was injected.
Each command below repeats one operation with N = 1, 2, ... until the
operation passes all its injection points without reaching N, and judges
each injected failure.

  fault_inject.py qdisc DEV [baseline]
      `qdisc add` of fq with OPTS, then `qdisc change` to CHANGE (below): an
      injected add fails with an errno and leaves no fq, or succeeds and
      dumps OPTS; an injected change fails with an errno and leaves the
      dump as it was, or succeeds and dumps what an uninjected change does
  fault_inject.py send DEV ADDR N
      N connected UDP sockets each send one datagram through DEV's fq, with
      the first injection point of each send armed: prints how many
      failures were injected and the fq's allocation_errors
  fault_inject.py modload KO MAXN
      finit_module(KO), failing points 1..MAXN in turn (no stack filter:
      the module's init code is not loaded before the call): each injected
      load fails with an errno and leaves the module unloaded, or loads it;
      a loaded module is removed again

Output: "name value" lines and "fail: ..." lines for each violation, which
fault_inject.sh turns into KTAP results.
"""
import ctypes
import os
import socket
import struct
import sys

import fq_nl

FAIL_NTH = "/proc/thread-self/fail-nth"
TCA_FQ_PLIMIT, TCA_FQ_FLOW_PLIMIT, TCA_FQ_BUCKETS_LOG = 1, 2, 8
# limit 1000 buckets 1024; then limit 500 flow_limit 50 buckets 4096 (the
# change allocates the new bucket array and moves the flows).
OPTS = (fq_nl.nla(TCA_FQ_PLIMIT, struct.pack("=I", 1000)) +
        fq_nl.nla(TCA_FQ_BUCKETS_LOG, struct.pack("=I", 10)))
CHANGE = (fq_nl.nla(TCA_FQ_PLIMIT, struct.pack("=I", 500)) +
          fq_nl.nla(TCA_FQ_FLOW_PLIMIT, struct.pack("=I", 50)) +
          fq_nl.nla(TCA_FQ_BUCKETS_LOG, struct.pack("=I", 12)))
SYS_FINIT_MODULE, SYS_DELETE_MODULE = 313, 176
libc = ctypes.CDLL(None, use_errno=True)


class FailNth:
    """Arms and reads this thread's fail-nth."""

    def __init__(self):
        self.fd = os.open(FAIL_NTH, os.O_RDWR)

    def arm(self, n):
        os.pwrite(self.fd, str(n).encode(), 0)

    def disarm(self):
        """Disarms; returns True if the failure was injected meanwhile."""
        left = int(os.pread(self.fd, 32, 0).strip() or b"0")
        os.pwrite(self.fd, b"0", 0)
        return left == 0


def qdisc_site(dev, opts, change, baseline):
    """baseline: C's fq, whose deviations are reported ("differs:"), not
    failed: its change applies attributes before it allocates."""
    bad = "differs:" if baseline else "fail:"
    nl = fq_nl.Rtnl()
    ifindex = socket.if_nametoindex(dev)
    nth = FailNth()
    fails = []

    def clean():
        fq_nl.qdisc(nl, ifindex, 0, mtype=fq_nl.RTM_DELQDISC)

    # Reference dumps, nothing injected.
    clean()
    err, _, _ = fq_nl.qdisc(nl, ifindex, fq_nl.NLM_F_CREATE | fq_nl.NLM_F_EXCL, opts)
    if err:
        print(f"fail: qdisc add without injection: errno {err}")
        return 1
    added = fq_nl.dump(nl, ifindex)
    err, _, _ = fq_nl.qdisc(nl, ifindex, 0, change)
    changed = fq_nl.dump(nl, ifindex)
    if err or not added or not changed:
        print(f"fail: qdisc change without injection: errno {err}")
        return 1
    clean()

    for what in ("add", "change"):
        n, errnos = 0, {}
        while True:
            n += 1
            if what == "change":
                fq_nl.qdisc(nl, ifindex, fq_nl.NLM_F_CREATE | fq_nl.NLM_F_EXCL, opts)
            nth.arm(n)
            if what == "add":
                err, ext, _ = fq_nl.qdisc(nl, ifindex, fq_nl.NLM_F_CREATE | fq_nl.NLM_F_EXCL, opts)
            else:
                err, ext, _ = fq_nl.qdisc(nl, ifindex, 0, change)
            injected = nth.disarm()
            now = fq_nl.dump(nl, ifindex)
            if not injected:
                if err or (now and now[0]) != (added if what == "add" else changed)[0]:
                    print(f"fail: {what} after the last point: errno {err}, dump {now}")
                break
            errnos[err] = errnos.get(err, 0) + 1
            want_ok = added if what == "add" else changed
            want_err = None if what == "add" else added
            if err == 0 and (not now or now[0] != want_ok[0]):
                print(f"{bad} {what} point {n}: accepted but dumps {now and now[0]}")
            if err and (now[0] if now else None) != (want_err[0] if want_err else None):
                print(f"{bad} {what} point {n}: errno {err} ({ext}) but the dump changed: {now and now[0]}")
            clean()
        clean()
        print(f"{what}_points {n - 1}")
        print(f"{what}_errnos " + ",".join(f"{os.strerror(e) if e else 'ok'}:{c}" for e, c in sorted(errnos.items())))
    return 0


def send_site(dev, addr, count):
    nth = FailNth()
    injected = 0
    for i in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, dev.encode())
        s.connect((addr, 9000 + i))
        # Half way, one flow is made: where flows come with room made
        # ahead for the next ones (Rust's heap chunks), the first
        # allocation of a new flow is then its own, not that room.
        if i != count // 2:
            nth.arm(1)
        try:
            s.send(b"x" * 64)
        except OSError as e:
            print(f"fail: send {i}: {e}")
        if i != count // 2:
            injected += nth.disarm()
        s.close()
    stats = fq_nl.dump(fq_nl.Rtnl(), socket.if_nametoindex(dev), root=False)
    print(f"sends {count}")
    print(f"injected {injected}")
    print(f"allocation_errors {stats[1]['allocation_errors'] if stats and stats[1] else 'none'}")
    return 0


def modload_site(ko, maxn):
    name = os.path.basename(ko)[:-3]
    nth = FailNth()
    fd = os.open(ko, os.O_RDONLY)
    loaded, errnos, n = 0, {}, 0
    for n in range(1, maxn + 1):
        nth.arm(n)
        r = libc.syscall(SYS_FINIT_MODULE, fd, b"", 0)
        err = ctypes.get_errno() if r else 0
        injected = nth.disarm()
        live = os.path.isdir(f"/sys/module/{name}")
        if (r == 0) != live:
            print(f"fail: point {n}: finit_module returned {r} (errno {err}) but loaded={live}")
        if live:
            loaded += 1
            if libc.syscall(SYS_DELETE_MODULE, name.encode(), os.O_NONBLOCK):
                print(f"fail: point {n}: cannot remove {name}: errno {ctypes.get_errno()}")
                return 1
        if not injected:
            break
        errnos[err] = errnos.get(err, 0) + 1
    os.close(fd)
    print(f"points {n - 1 if not injected else n}")
    print(f"complete {0 if injected else 1}")
    print("errnos " + ",".join(f"{os.strerror(e) if e else 'ok'}:{c}" for e, c in sorted(errnos.items())))
    return 0


def main():
    cmd = sys.argv[1]
    if cmd == "qdisc":
        return qdisc_site(sys.argv[2], OPTS, CHANGE, sys.argv[3:] == ["baseline"])
    if cmd == "send":
        return send_site(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    if cmd == "modload":
        return modload_site(sys.argv[2], int(sys.argv[3]))
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
