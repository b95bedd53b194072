#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Raw rtnetlink for the fq selftests: what tc and ynl cannot send.

  fq_nl.py fuzz DEV N SEED OUT.json   N random TCA_OPTIONS sets (valid and
                                      invalid: wrong types, lengths, values)
                                      against the fq loaded now; records the
                                      errno, extack and dumps of each
  fq_nl.py compare RUST.json C.json   differential verdict, KTAP lines
  fq_nl.py xstats DEV [NAME]          the fq tc_fq_qd_stats of DEV, a
                                      "name value" line each (NAME: that
                                      field's value alone)

Each fuzz set runs on a fresh qdisc: half of them as the options of
`qdisc add` (init), half as a `qdisc change` of a default fq, so that a
change rejected by C's partial-apply behaviour cannot leak into the next set.

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
TCA_KIND, TCA_OPTIONS, TCA_XSTATS = 1, 2, 4
TC_H_ROOT = 0xFFFFFFFF
TCA_FQ_MAX = 17
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
    body = tcmsg(ifindex) + nla(TCA_KIND, b"fq\0")
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
        return opts, stats
    return None


U32_VALUES = [0, 1, 2, 3, 17, 18, 19, 100, 255, 256, 1500, 65535, 1 << 20,
              (1 << 20) + 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]


def random_attr(rnd):
    t = rnd.choice(list(range(0, TCA_FQ_MAX + 3)))
    kind = rnd.random()
    if kind < 0.15:
        # Wrong length, any type.
        return nla(t, bytes(rnd.randrange(256) for _ in range(rnd.choice([0, 1, 2, 3, 5, 7, 8, 12, 19, 21]))))
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


def fuzz(dev, n, seed, out):
    import json
    import random
    nl = Rtnl()
    ifindex = socket.if_nametoindex(dev)
    rnd = random.Random(seed)
    results = []
    for i in range(n):
        opts = b"".join(random_attr(rnd) for _ in range(rnd.randrange(1, 6)))
        if rnd.random() < 0.1:
            opts += bytes(rnd.randrange(1, 4))  # trailing garbage
        as_init = i % 2 == 0
        qdisc(nl, ifindex, 0, mtype=RTM_DELQDISC)
        if as_init:
            before = None
            err, ext, _ = qdisc(nl, ifindex, NLM_F_CREATE | NLM_F_EXCL, opts)
        else:
            e0, _, _ = qdisc(nl, ifindex, NLM_F_CREATE | NLM_F_EXCL)
            if e0:
                raise SystemExit(f"set {i}: cannot create a default fq: errno {e0}")
            before = dump(nl, ifindex)
            err, ext, _ = qdisc(nl, ifindex, 0, opts)
        after = dump(nl, ifindex)
        results.append({
            "i": i, "init": as_init, "opts": opts.hex(), "errno": err, "extack": ext,
            "before": before[0] if before else None,
            "after": after[0] if after else None,
        })
    qdisc(nl, ifindex, 0, mtype=RTM_DELQDISC)
    # dumps(), not dump(): only the one-shot encoder is C's.
    with open(out, "w") as f:
        f.write(json.dumps(results))


def compare(rust_file, c_file):
    import json
    rust = json.load(open(rust_file))
    c = json.load(open(c_file))
    n = len(rust)
    errs = sum(1 for r in rust if r["errno"])
    problems = {"errno": [], "extack": [], "intact": [], "dump": []}
    for r, k in zip(rust, c):
        if r["errno"] != k["errno"]:
            problems["errno"].append((r["i"], r["errno"], k["errno"], r["opts"]))
        # A change applies to a default fq, which must dump (else the
        # "intact" check below compares nothing).
        if not r["init"] and r["before"] is None:
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
    print(f"# {n} random attribute sets, {errs} rejected by the Rust fq")
    checks = [
        ("errno", f"same errno as C fq for all {n} sets"),
        ("extack", "every rejected set has an extack message (Rust)"),
        ("intact", "every rejected set leaves the configuration intact (Rust)"),
        ("dump", "every accepted set dumps the same options as C fq"),
    ]
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
        fuzz(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
        return 0
    if cmd == "compare":
        return compare(sys.argv[2], sys.argv[3])
    if cmd == "xstats":
        return 0 if print_xstats(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None) else 1
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
