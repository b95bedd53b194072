#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Raw rtnetlink for the fq selftests: what tc and ynl cannot send.

  fq_nl.py fuzz DEV N SEED OUT.json [TDEV TADDR]
                                      N random TCA_OPTIONS sets (valid and
                                      invalid: wrong types, lengths, values,
                                      unknown and nested attributes) against
                                      the fq loaded now; records the errno,
                                      extack and dumps of each; with TDEV,
                                      every 50th set also carries traffic:
                                      it becomes the fq of TDEV (up), and 64
                                      datagrams go to TADDR through it
  fq_nl.py compare RUST.json C.json   differential verdict, KTAP lines
  fq_nl.py xstats DEV [NAME]          the fq tc_fq_qd_stats of DEV, a
                                      "name value" line each (NAME: that
                                      field's value alone)

Each fuzz set runs on a fresh qdisc, in turn as the options of `qdisc add`
(init), of a `qdisc change` of a default fq, and of a `qdisc replace` that
puts a new fq (handle 2:) in place of a default one (1:), so that a change
rejected by C's partial-apply behaviour cannot leak into the next set.

json and random are imported where used: each module costs a noticeable
part of a second of the emulated guest's Python start.
"""
# pylint: disable=import-outside-toplevel
import os
import socket
import struct
import sys

RTM_NEWQDISC, RTM_DELQDISC, RTM_GETQDISC = 36, 37, 38
NLM_F_REQUEST, NLM_F_ACK, NLM_F_ECHO = 0x1, 0x4, 0x8
NLM_F_REPLACE, NLM_F_EXCL, NLM_F_CREATE = 0x100, 0x200, 0x400
NLM_F_DUMP = 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NETLINK_EXT_ACK = 11
NLMSGERR_ATTR_MSG = 1
TCA_KIND, TCA_OPTIONS, TCA_XSTATS, TCA_STATS2 = 1, 2, 4, 7
TCA_STATS_BASIC, TCA_STATS_QUEUE = 1, 3
TRAFFIC_EVERY, TRAFFIC_PKTS = 50, 64
TC_H_ROOT = 0xFFFFFFFF
TCA_FQ_MAX = 17
TCA_FQ_PLIMIT, TCA_FQ_FLOW_PLIMIT, TCA_FQ_FLOW_MAX_RATE = 1, 2, 7
FQ_STATS = struct.Struct("=7Qq4I4Q3Q3II")
FQ_STATS_NAMES = ["gc_flows", "highprio_packets", "tcp_retrans", "throttled",
                  "flows_plimit", "pkts_too_long", "allocation_errors",
                  "time_next_delayed_flow", "flows", "inactive_flows",
                  "throttled_flows", "unthrottle_latency_ns", "ce_mark",
                  "horizon_drops", "horizon_caps", "fastpath_packets",
                  "band_drops0", "band_drops1", "band_drops2",
                  "band_pkt_count0", "band_pkt_count1", "band_pkt_count2", "pad"]


def nla(t, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, t) + payload + b"\0" * ((4 - n % 4) % 4)


def parse_attrs(buf):
    out, off = {}, 0
    while off + 4 <= len(buf):
        n, t = struct.unpack_from("=HH", buf, off)
        if n < 4:
            break
        out[t & 0x3FFF] = buf[off + 4:off + n]
        off += (n + 3) & ~3
    return out


class Rtnl:
    def __init__(self):
        self.s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        self.s.setsockopt(270, NETLINK_EXT_ACK, 1)
        self.s.bind((0, 0))
        self.seq = 0

    def request(self, mtype, flags, body):
        """Returns (errno, extack message, replies)."""
        self.seq += 1
        msg = struct.pack("=IHHII", 16 + len(body), mtype,
                          flags | NLM_F_REQUEST | NLM_F_ACK, self.seq, 0) + body
        self.s.send(msg)
        replies = []
        while True:
            data = self.s.recv(1 << 16)
            off = 0
            while off + 16 <= len(data):
                n, t, _f, seq, _pid = struct.unpack_from("=IHHII", data, off)
                payload = data[off + 16:off + n]
                off += (n + 3) & ~3
                if seq != self.seq:
                    continue
                if t == NLMSG_ERROR:
                    err = -struct.unpack_from("=i", payload)[0]
                    ext = ""
                    orig_len = struct.unpack_from("=I", payload, 4)[0]
                    # Without NLM_F_CAPPED, the request is echoed on errors.
                    tlv_off = 4 + (16 if err == 0 or (_f & 0x100) else orig_len)
                    attrs = parse_attrs(payload[tlv_off:])
                    if NLMSGERR_ATTR_MSG in attrs:
                        ext = attrs[NLMSGERR_ATTR_MSG].rstrip(b"\0").decode(errors="replace")
                    return err, ext, replies
                if t == NLMSG_DONE:
                    return 0, "", replies
                replies.append((t, payload))


def tcmsg(ifindex, handle=0x10000, parent=TC_H_ROOT):
    return struct.pack("=BBHiIII", 0, 0, 0, ifindex, handle, parent, 0)


def qdisc(nl, ifindex, flags, opts=None, mtype=RTM_NEWQDISC):
    # A delete names no handle: it takes the root, whichever it is (1:, or
    # 2: after a replace).
    body = tcmsg(ifindex, 0 if mtype == RTM_DELQDISC else 0x10000) + nla(TCA_KIND, b"fq\0")
    if opts is not None:
        body += nla(TCA_OPTIONS, opts)
    return nl.request(mtype, flags, body)


def dump(nl, ifindex, root=True):
    """The fq qdisc of ifindex, its root one or (root=False) the first of a
    dump of all: (options {type: hex}, xstats dict) or None. The root is
    asked for alone (tc_get_qdisc()); without NLM_F_ECHO the answer would
    go to the RTNLGRP_TC listeners only."""
    if root:
        _, _, replies = nl.request(RTM_GETQDISC, NLM_F_ECHO, tcmsg(ifindex, 0))
    else:
        _, _, replies = nl.request(RTM_GETQDISC, NLM_F_DUMP, tcmsg(0, 0, 0))
    for t, payload in replies:
        if t != RTM_NEWQDISC:
            continue
        ifi = struct.unpack_from("=i", payload, 4)[0]
        attrs = parse_attrs(payload[20:])
        if ifi != ifindex or attrs.get(TCA_KIND, b"").rstrip(b"\0") != b"fq":
            continue
        opts = {str(k): v.hex() for k, v in sorted(parse_attrs(attrs.get(TCA_OPTIONS, b"")).items())}
        xs = attrs.get(TCA_XSTATS)
        stats = dict(zip(FQ_STATS_NAMES, FQ_STATS.unpack(xs[:FQ_STATS.size]))) if xs else None
        # The whole attribute: C's struct and nothing more, in both.
        if stats is not None:
            stats["xstats_bytes"] = len(xs)
        return opts, stats
    return None


U32_VALUES = [0, 1, 2, 3, 17, 18, 19, 100, 255, 256, 1500, 65535, 1 << 20,
              (1 << 20) + 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]


NLA_F_NESTED, NLA_F_NET_BYTEORDER = 0x8000, 0x4000


def random_attr(rnd):
    t = rnd.choice(list(range(0, TCA_FQ_MAX + 3)) + [100, 0x3FFF])
    kind = rnd.random()
    if kind < 0.15:
        # Wrong length, any type.
        return nla(t, bytes(rnd.randrange(256) for _ in range(rnd.choice([0, 1, 2, 3, 5, 7, 8, 12, 19, 21]))))
    if kind < 0.22:
        # Nested junk: attributes inside an attribute, flagged nested or
        # not, or a valid-looking attribute with a flag bit set.
        inner = b"".join(nla(rnd.randrange(TCA_FQ_MAX + 3), struct.pack("=I", rnd.choice(U32_VALUES)))
                         for _ in range(rnd.randrange(0, 3)))
        flag = rnd.choice([0, NLA_F_NESTED, NLA_F_NET_BYTEORDER])
        if rnd.random() < 0.5:
            return nla(t | flag, inner)
        return nla(t | flag, struct.pack("=I", rnd.choice(U32_VALUES)))
    if t == 15:  # horizon_drop: u8
        return nla(t, bytes([rnd.choice([0, 1, 2, 255])]))
    if t == 16:  # priomap: struct tc_prio_qopt
        bands = rnd.choice([3, 3, 3, 2, 4, 0, -1])
        top = rnd.choice([3, 3, 4])
        return nla(t, struct.pack("=i", bands) + bytes(rnd.randrange(top) for _ in range(16)))
    if t == 17:  # weights: s32[3]
        ws = [rnd.choice([16384, 16383, 65536, 1 << 20, 0, -1, rnd.randrange(1 << 31)]) for _ in range(3)]
        return nla(t, struct.pack("=3i", *ws))
    v = rnd.choice(U32_VALUES) if rnd.random() < 0.7 else rnd.randrange(1 << 32)
    return nla(t, struct.pack("=I", v))


MODES = ("init", "change", "replace")


def stats2(payload):
    """(packets sent, qlen, drops) from an RTM_NEWQDISC's TCA_STATS2."""
    st = parse_attrs(parse_attrs(payload[20:]).get(TCA_STATS2, b""))
    packets = struct.unpack_from("=QI", st[TCA_STATS_BASIC])[1] if TCA_STATS_BASIC in st else None
    q = struct.unpack_from("=5I", st[TCA_STATS_QUEUE]) if TCA_STATS_QUEUE in st else (None,) * 5
    return packets, q[0], q[2]


def traffic(nl, tdev, opts, socks):
    """The options as a new fq root of tdev (up), then TRAFFIC_PKTS
    datagrams through it from the sockets: returns [errno, offered - (sent
    + queued + dropped), sent, queued, dropped]; the difference must be
    0."""
    tidx = socket.if_nametoindex(tdev)
    qdisc(nl, tidx, 0, mtype=RTM_DELQDISC)
    err, _, _ = qdisc(nl, tidx, NLM_F_CREATE | NLM_F_EXCL, opts)
    if err:
        return [err, None, 0, 0, 0]
    offered = 0
    for i in range(TRAFFIC_PKTS):
        try:
            socks[i % len(socks)].send(bytes(64 + 37 * i % 1400))
            offered += 1  # a drop at enqueue too: UDP hides ENOBUFS
        except BlockingIOError:
            pass  # the socket's send buffer is full: never offered
    # A dump reads qlen and the sent count one after the other, not under
    # the qdisc's lock: a dequeue in between (the watchdog, on any CPU)
    # counts a packet in both. Nothing enqueues any more and dequeues
    # only lower qlen, so a dump followed by one with the same qlen saw
    # no dequeue while it was read.
    prev = None
    for _ in range(1000):
        cur = None
        _, _, replies = nl.request(RTM_GETQDISC, NLM_F_ECHO, tcmsg(tidx, 0))
        for t, payload in replies:
            if t == RTM_NEWQDISC:
                cur = stats2(payload)
        if cur is None or None in cur:
            break
        if prev is not None and cur[1] == prev[1]:
            packets, qlen, drops = prev
            return [0, offered - (packets + qlen + drops), packets, qlen, drops]
        prev = cur
    return [0, None, 0, 0, 0]


def fuzz(dev, n, seed, out, tdev=None, taddr=None):
    import json
    import random
    nl = Rtnl()
    ifindex = socket.if_nametoindex(dev)
    rnd = random.Random(seed)
    socks = []
    if tdev:
        for port in range(4):
            sk = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sk.connect((taddr, 9 + port))
            sk.setblocking(False)
            socks.append(sk)
    results = []
    for i in range(n):
        opts = b"".join(random_attr(rnd) for _ in range(rnd.randrange(1, 6)))
        if rnd.random() < 0.1:
            opts += bytes(rnd.randrange(1, 4))  # trailing garbage
        mode = MODES[i % len(MODES)]
        qdisc(nl, ifindex, 0, mtype=RTM_DELQDISC)
        if mode == "init":
            before = None
            err, ext, _ = qdisc(nl, ifindex, NLM_F_CREATE | NLM_F_EXCL, opts)
        else:
            e0, _, _ = qdisc(nl, ifindex, NLM_F_CREATE | NLM_F_EXCL)
            if e0:
                raise SystemExit(f"set {i}: cannot create a default fq: errno {e0}")
            before = dump(nl, ifindex)
            if mode == "change":
                err, ext, _ = qdisc(nl, ifindex, 0, opts)
            else:
                # A new qdisc (handle 2:) in place of the root 1:, through
                # init: on error the old one stays.
                body = tcmsg(ifindex, 0x20000) + nla(TCA_KIND, b"fq\0") + nla(TCA_OPTIONS, opts)
                err, ext, _ = nl.request(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, body)
        after = dump(nl, ifindex)
        r = {
            "i": i, "mode": mode, "opts": opts.hex(), "errno": err, "extack": ext,
            "before": before[0] if before else None,
            "after": after[0] if after else None,
        }
        if tdev and i % TRAFFIC_EVERY == TRAFFIC_EVERY - 1:
            # Limits and a rate that queue and drop some of the packets;
            # the set's own attributes come after them, and the last of
            # a type wins.
            stress = (nla(TCA_FQ_PLIMIT, struct.pack("=I", rnd.choice([5, 30, 10000])))
                      + nla(TCA_FQ_FLOW_PLIMIT, struct.pack("=I", rnd.choice([1, 3, 10, 100])))
                      + nla(TCA_FQ_FLOW_MAX_RATE,
                            struct.pack("=I", rnd.choice([0, 8000, 1000000, 0xFFFFFFFF]))))
            r["traffic"] = traffic(nl, tdev, stress + opts, socks)
        results.append(r)
    qdisc(nl, ifindex, 0, mtype=RTM_DELQDISC)
    if tdev:
        qdisc(nl, socket.if_nametoindex(tdev), 0, mtype=RTM_DELQDISC)
    # dumps(), not dump(): only the one-shot encoder is C's.
    with open(out, "w") as f:
        f.write(json.dumps(results))


def compare(rust_file, c_file):
    import json
    rust = json.load(open(rust_file))
    c = json.load(open(c_file))
    n = len(rust)
    errs = sum(1 for r in rust if r["errno"])
    problems = {"errno": [], "extack": [], "warn": [], "intact": [], "dump": [], "traffic": []}
    traffic_runs = {"rust": 0, "c": 0}
    traffic_counts = {"rust": [0, 0, 0], "c": [0, 0, 0]}
    for r, k in zip(rust, c):
        if r["errno"] != k["errno"]:
            problems["errno"].append((r["i"], r["errno"], k["errno"], r["opts"]))
        # A change or replace applies to a default fq, which must dump
        # (else the "intact" check below compares nothing).
        if r["mode"] != "init" and r["before"] is None:
            problems["intact"].append((r["i"], "no fq dumped before the change"))
        if r["errno"]:
            if not r["extack"]:
                problems["extack"].append((r["i"], r["errno"], r["opts"]))
            # A rejected change keeps the old configuration; a rejected
            # init creates no qdisc.
            if r["after"] != r["before"]:
                problems["intact"].append((r["i"], r["opts"]))
        elif r["after"] is None or r["after"] != k["after"]:
            problems["dump"].append((r["i"], r["opts"], r["after"], k["after"]))
        # An accepted set's ack carries what C's does: C parses fq's
        # options without an extack, so no parser warning ("bytes leftover
        # after parsing attributes" of trailing garbage).
        if not r["errno"] and not k["errno"] and r["extack"] != k["extack"]:
            problems["warn"].append((r["i"], r["extack"], k["extack"], r["opts"]))
        for impl, res in (("rust", r), ("c", k)):
            if "traffic" not in res:
                continue
            terr, missing, *counts = res["traffic"]
            traffic_runs[impl] += terr == 0
            traffic_counts[impl] = [a + b for a, b in zip(traffic_counts[impl], counts)]
            if terr == 0 and missing != 0:
                problems["traffic"].append((impl, res["i"], missing, res["opts"]))
        if r.get("traffic", [0])[0] != k.get("traffic", [0])[0]:
            problems["errno"].append((r["i"], "traffic", r["traffic"], k["traffic"]))
    modes = {m: sum(1 for r in rust if r["mode"] == m) for m in MODES}
    print(f"# {n} random attribute sets ({modes}), {errs} rejected by the Rust fq")
    checks = [
        ("errno", f"same errno as C fq for all {n} sets"),
        ("extack", "every rejected set has an extack message (Rust)"),
        ("intact", "every rejected set leaves the configuration intact (Rust)"),
        ("dump", "every accepted set dumps the same options as C fq"),
        ("warn", "every accepted set gets the extack C gives (no warning C does not give)"),
    ]
    for impl in ("rust", "c"):
        sent, queued, dropped = traffic_counts[impl]
        print(f"# traffic, {impl}: {sent} sent, {queued} queued, {dropped} dropped")
    if traffic_runs["rust"] or traffic_runs["c"]:
        checks.append(("traffic", f"every packet through a traffic set sent, queued or "
                       f"dropped ({traffic_runs['rust']} Rust, {traffic_runs['c']} C runs "
                       f"of {TRAFFIC_PKTS} packets)"))
    ok = True
    for key, desc in checks:
        bad = problems[key]
        for b in bad[:5]:
            print(f"#   {key} mismatch: {b}")
        print(("ok" if not bad else "not ok") + f" - {desc}" + (f" ({len(bad)} mismatches)" if bad else ""))
        ok &= not bad
    covered = n >= 2000 and 0 < errs < n
    print(("ok" if covered else "not ok") + f" - the run covers >= 2000 sets, valid and invalid ({n}, {errs} invalid)")
    ok &= covered
    return 0 if ok else 1


def print_xstats(dev, name=None):
    """Prints the fq statistics of DEV, root or child ("name value" lines,
    or NAME's value); False if DEV has no fq."""
    d = dump(Rtnl(), socket.if_nametoindex(dev), root=False)
    if not d or not d[1]:
        return False
    if name:
        print(d[1][name])
    else:
        for k, v in d[1].items():
            print(k, v)
    return True


def main():
    cmd = sys.argv[1]
    if cmd == "fuzz":
        fuzz(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5],
             *sys.argv[6:8])
        return 0
    if cmd == "compare":
        return compare(sys.argv[2], sys.argv[3])
    if cmd == "xstats":
        return 0 if print_xstats(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None) else 1
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
