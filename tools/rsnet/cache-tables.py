#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""cache-tables.py RESULTS: make bench's cache model, per packet.

Joins the regions the guest ran (RESULTS/marks.tsv, guest-bench.sh) with
the counts of the cache model (RESULTS/cache.tsv, tools/rsnet/cacheplugin)
and prints, in reStructuredText, for each row of the fq, fqscale and
page_pool tables: instructions, data accesses and L1d/L2/LLC misses per
packet (page_pool: per alloc + put), C and Rust, medians of the rounds,
with ratios, and bytes per flow where the row has them; for the rows
where Rust misses more, the functions whose accesses miss, and for the
rows where Rust executes more instructions, the functions that execute
them. Writes
RESULTS/cache-plot.dat (misses per packet against flows, fqscale's
default-bucket rows) for bench-plot.sh.
"""
import bisect
import os
import statistics
import sys
from collections import defaultdict

TITLES = {
    "fq": "sch_fq, the qdisc alone (fq_bench): per packet (one enqueue + dequeue)",
    "fqscale": "sch_fq at scale (fq_bench, burst 64): per packet",
    "page_pool": "page_pool (page_pool_bench): per alloc + put",
}
LEVELS = ("l1", "l2", "llc")


def load(res):
    counts = {}
    pcs = defaultdict(list)  # id -> [(address, l1, l2, llc)]
    ins = defaultdict(list)  # id -> [(block address, instructions)]
    lost = 0
    with open(f"{res}/cache.tsv") as f:
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] == "lost":
                lost += int(w[1])
                continue
            if w[0] in ("split", "tbs", "marks"):
                continue
            if w[0] == "pc":
                pcs[int(w[1])].append((int(w[2], 16), int(w[3]), int(w[4]), int(w[5])))
                continue
            if w[0] == "ins":
                ins[int(w[1])].append((int(w[2], 16), int(w[3])))
                continue
            counts[int(w[0])] = dict(zip(("enters", "acc", "st", "l1", "l2", "llc"), map(int, w[1:])))
    runs = defaultdict(lambda: {"acc": 0, "l1": 0, "l2": 0, "llc": 0, "enters": 0,
                                "ids": []})
    meta = {}
    order = []
    with open(f"{res}/marks.tsv") as f:
        for line in f:
            mid, table, row, impl, rnd, pkts, ns, bpf = line.rstrip("\n").split("\t")
            key = (table, row, impl, rnd)
            c = counts.get(int(mid) % 4096)
            if c is None:
                continue
            r = runs[key]
            for k in ("acc", "l1", "l2", "llc", "enters"):
                r[k] += c[k]
            r["ids"].append(int(mid))
            meta[key] = (int(pkts or 0), float(ns or 0), bpf)
            if (table, row) not in order:
                order.append((table, row))
    return runs, meta, order, lost, pcs, ins


def short(name):
    """A Rust v0 symbol as the identifiers in it, enough to read."""
    sym, _, mod = name.partition(" ")
    if not sym.startswith("_R"):
        return name
    ids, i = [], 2
    while i < len(sym):
        if sym[i].isdigit():
            j = i
            while j < len(sym) and sym[j].isdigit():
                j += 1
            n = int(sym[i:j])
            if sym[j:j + 1] == "_":
                j += 1
            ident = sym[j:j + n]
            if n >= 2 and ident.replace("_", "a").isalnum() and not ident[0].isdigit():
                ids.append(ident)
                i = j + n
                continue
        i += 1
    # Drop the crate-level path words: keep what names the function.
    ids = [x for x in ids if x not in ("kernel", "net", "core", "ops", "function")]
    return "::".join(ids[-4:]) + (" " + mod if mod else "")


class Symbols:
    """Names of kernel text addresses: the kernel's, and a region's modules."""

    def __init__(self, res):
        self.res = res
        self.kernel = self.read(f"{res}/syms-kernel.txt")
        self.mods = {}

    @staticmethod
    def read(path):
        syms = []
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    w = line.split()
                    if len(w) >= 3:
                        syms.append((int(w[0], 16), w[2] + (" " + w[3] if len(w) > 3 else "")))
        syms.sort()
        return syms

    def name(self, mid, addr):
        if mid not in self.mods:
            self.mods[mid] = self.read(f"{self.res}/syms-{mid}.txt")
        best = None
        for syms in (self.mods[mid], self.kernel):
            i = bisect.bisect_right(syms, (addr, "\U0010ffff")) - 1
            if i >= 0 and (best is None or syms[i][0] > best[0]):
                best = syms[i]
        return best[1] if best else f"{addr:x}"


def med(v):
    return statistics.median(v) if v else float("nan")


def ratio(r, c):
    return f"{r / c:.3f}" if c else "n/a"


# Below this many misses per packet a level holds the whole working set:
# what is left are the first touches of a run, and a ratio of them says
# nothing.
FLOOR = 0.01


def miss_ratio(r, c):
    return ratio(r, c) if max(r, c) >= FLOOR else "-"


def main():
    res = sys.argv[1]
    runs, meta, order, lost, pcs, ins = load(res)
    syms = Symbols(res)
    # (table, row, impl) -> function -> [l1, l2, llc] summed, and packets
    by_fn = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    fn_pkts = defaultdict(int)
    # (table, row, impl) -> function -> instructions summed
    ins_fn = defaultdict(lambda: defaultdict(int))
    for key, r in runs.items():
        pkts = meta[key][0]
        if pkts <= 0:
            continue
        k3 = key[:3]
        fn_pkts[k3] += pkts
        for mid in r["ids"]:
            for addr, l1, l2, llc in pcs.get(mid % 4096, ()):
                e = by_fn[k3][syms.name(mid, addr)]
                e[0] += l1
                e[1] += l2
                e[2] += llc
            for addr, n in ins.get(mid % 4096, ()):
                ins_fn[k3][syms.name(mid, addr)] += n
    per = defaultdict(lambda: defaultdict(list))  # (table,row,impl) -> key -> values
    for (table, row, impl, rnd), r in runs.items():
        pkts, ns, bpf = meta[(table, row, impl, rnd)]
        if pkts <= 0:
            continue
        p = per[(table, row, impl)]
        p["ins"].append(ns)
        p["acc"].append(r["acc"] / pkts)
        for lv in LEVELS:
            p[lv].append(r[lv] / pkts)
        if bpf not in ("", "-"):
            p["bpf"].append(float(bpf))
    out = []
    say = out.append
    say("Cache model (tools/rsnet/cacheplugin: L1d 48 KiB 12-way, L2 2 MiB 16-way,")
    say("LLC 32 MiB 16-way, 64 B lines, LRU, physical addresses, no prefetch), per")
    say("vCPU, inside the measured loops; medians of the rounds. ins: instructions")
    say("(-icount shift=0: 1 ns each); acc: data accesses; L1, L2, LLC: misses;")
    say(f"R/C: Rust/C, '-' where both miss less than {FLOOR} a packet (cold misses only).")
    if lost:
        say(f"WARNING: {lost} marks came before the previous one's id load: "
            "their regions' counts are wrong.")
    say("")
    head = ["case", "ins C", "ins Rust", "R/C", "acc C", "acc Rust",
            "L1 C", "L1 Rust", "R/C", "L2 C", "L2 Rust", "R/C",
            "LLC C", "LLC Rust", "R/C", "B/flow C", "B/flow Rust"]
    for table in ("fq", "fqscale", "page_pool"):
        rows = [row for t, row in order if t == table]
        if not rows:
            continue
        lines = []
        for row in rows:
            c, r = per[(table, row, "c")], per[(table, row, "rust")]
            cells = [row]
            mi = (med(c["ins"]), med(r["ins"]))
            cells += [f"{mi[0]:.1f}", f"{mi[1]:.1f}", ratio(mi[1], mi[0])]
            cells += [f"{med(c['acc']):.2f}", f"{med(r['acc']):.2f}"]
            for lv in LEVELS:
                m = (med(c[lv]), med(r[lv]))
                cells += [f"{m[0]:.3f}", f"{m[1]:.3f}", miss_ratio(m[1], m[0])]
            cells += [f"{med(c['bpf']):.0f}" if c["bpf"] else "-",
                      f"{med(r['bpf']):.0f}" if r["bpf"] else "-"]
            lines.append(cells)
        widths = [max(len(x[i]) for x in lines + [head]) for i in range(len(head))]
        rule = "  ".join("=" * w for w in widths)
        say(TITLES[table])
        say("")
        say(rule)
        say("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        say(rule)
        for cells in lines:
            say("  ".join(x.ljust(w) for x, w in zip(cells, widths)).rstrip())
        say(rule)
        say("")
    # Where the misses are: for each row where Rust misses more than C at
    # some level, the functions with the most misses per packet.
    say("Where the misses are, for each row where Rust misses more than C (by over 2 %) at a")
    say("level: the functions (their instructions' data accesses) with the most")
    say("L1 misses per packet, L2 and LLC misses after them; C, then Rust.")
    say("")
    for table, row in order:
        c, r = per[(table, row, "c")], per[(table, row, "rust")]
        # Beyond 2 %, what two runs of the same code can differ by.
        worse = [lv for lv in LEVELS
                 if max(med(c[lv]), med(r[lv])) >= FLOOR and med(r[lv]) > 1.02 * med(c[lv])]
        if not worse:
            continue
        say(f"{TITLES[table].split(':')[0]}, {row} (Rust misses more at {', '.join(worse)}):")
        say("")
        top_functions(say, table, row, by_fn, fn_pkts, lambda m: m[0],
                      lambda m, n: f"{m[0] / n:.3f}/{m[1] / n:.3f}/{m[2] / n:.3f}")
    # Where the instructions are: for each row where Rust executes more
    # instructions than C, the functions that execute the most of them.
    more = [(table, row) for table, row in order
            if med(per[(table, row, "rust")]["ins"]) > med(per[(table, row, "c")]["ins"])]
    if ins:
        say("Rust executes at most C's instructions on every row." if not more else
            "Rust executes more instructions than C on: " +
            "; ".join(f"{TITLES[t].split(':')[0]}, {r}" for t, r in more) + ".")
        say("")
        say("Where the instructions are, for each row: the functions (the")
        say("translation blocks that start in them) with the most instructions per")
        say("packet; C, then Rust.")
        say("")
        for table, row in order:
            c, r = per[(table, row, "c")], per[(table, row, "rust")]
            d = med(r["ins"]) - med(c["ins"])
            say(f"{TITLES[table].split(':')[0]}, {row} "
                f"({abs(d):.1f} {'more' if d > 0 else 'fewer'} a packet):")
            say("")
            top_functions(say, table, row, ins_fn, fn_pkts, lambda m: m,
                          lambda m, n: f"{m / n:.1f}")
    print("\n".join(out))
    write_plot(res, order, per)


def top_functions(say, table, row, by_fn, fn_pkts, weight, fmt):
    """The eight functions of most `weight`, per packet, C then Rust."""
    for impl in ("c", "rust"):
        k3 = (table, row, impl)
        fns = sorted(by_fn[k3].items(), key=lambda kv: -weight(kv[1]))[:8]
        n = fn_pkts[k3] or 1
        say(f"- {'C' if impl == 'c' else 'Rust'}: " + "; ".join(
            f"``{short(name)}`` {fmt(m, n)}" for name, m in fns))
    say("")


def write_plot(res, order, per):
    # Misses per packet against flows: fqscale's rows "N flows".
    with open(f"{res}/cache-plot.dat", "w") as f:
        for table, row in order:
            if table != "fqscale" or not row.endswith(" flows"):
                continue
            flows = int(row.split()[0].replace(",", ""))
            c, r = per[(table, row, "c")], per[(table, row, "rust")]
            f.write(" ".join([str(flows)] + [f"{med(x[lv]):.4f}" for lv in LEVELS for x in (c, r)]) + "\n")


if __name__ == "__main__":
    main()
