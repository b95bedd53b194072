#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Mutants of the Rust fq for the differential oracle (make mutants).

The mutants are records in tools/testing/selftests/rsnet/mutants/*.mutants
(the format is described at the top of sch_fq_rs.mutants): a file, an exact
original snippet, its replacement, a description. Applying one fails loudly
unless the snippet occurs exactly once in the file as it is now.

A mutant of the flow table (rust/kernel/flow_table.rs or a file under
rust/kernel/flow_table/) cannot be built into the kernel crate: the
mutated module gets a copy of the flow table of its own instead
(DIR/ft_NAME/, its crate paths made the kernel crate's), which its "use
kernel::flow_table" is pointed at. The fq uses only generic code of the
table, so the module held the table's code already; now it holds the
mutated one.

  mutants.py check                   every mutant applies
  mutants.py select all|N [SEED]     the names: all, or N drawn from SEED
                                     among those not shown equivalent
  mutants.py write DIR NAME...       DIR/fqm_NAME.rs, the mutated module
                                     source of each, DIR/Kbuild and
                                     DIR/list (NAME, module, desc,
                                     equivalence reason, tab-separated)
"""
import os
import random
import re
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MDIR = os.path.join(TOP, "tools/testing/selftests/rsnet/mutants")
# The module the mutants replace, and what they are built as: the oracle
# build of sch_fq_rs.rs (see Kbuild).
MODULE_SRC = "net/sched/sch_fq_rs.rs"
# The oracle build's flow table limit (Kbuild's sch_fq_rs_vt.rs): the
# substitution of tools/rsnet/fq_vt.sed.
MAX_FLOWS = (re.compile(r"^const FQ_MAX_FLOWS: u32 = .*;$", re.M), "const FQ_MAX_FLOWS: u32 = 4096;")
# The flow table: its root file and the directory of its submodules.
FT_ROOT = "rust/kernel/flow_table.rs"
FT_DIR = "rust/kernel/flow_table"
FT_USE = "use kernel::flow_table::{"


class MutantError(Exception):
    pass


def parse(path):
    """The records of one .mutants file, in order."""
    out, cur = [], None
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            line = line.rstrip("\n")
            where = "%s:%d" % (os.path.relpath(path, TOP), no)
            if cur is None:
                if not line.strip() or line.startswith("#"):
                    continue
                m = re.fullmatch(r"mutant ([a-z0-9_]+)", line)
                if not m:
                    raise MutantError("%s: expected 'mutant NAME', got %r" % (where, line))
                cur = {"name": m.group(1), "old": [], "new": [], "where": where,
                       "equivalent": ""}
                continue
            if line == "end":
                for k in ("file", "desc"):
                    if k not in cur:
                        raise MutantError("%s: mutant %s has no %s" % (where, cur["name"], k))
                if not cur["old"]:
                    raise MutantError("%s: mutant %s has no original snippet" % (where, cur["name"]))
                cur["old"] = "\n".join(cur["old"])
                cur["new"] = "\n".join(cur["new"])
                out.append(cur)
                cur = None
            elif line.startswith("-"):
                cur["old"].append(line[1:])
            elif line.startswith("+"):
                cur["new"].append(line[1:])
            else:
                m = re.fullmatch(r"(file|desc|equivalent) (.+)", line)
                if not m:
                    raise MutantError("%s: unexpected line %r" % (where, line))
                cur[m.group(1)] = m.group(2)
    if cur is not None:
        raise MutantError("%s: mutant %s has no 'end'" % (path, cur["name"]))
    return out


def load():
    muts = []
    for fn in sorted(os.listdir(MDIR)):
        if fn.endswith(".mutants"):
            muts += parse(os.path.join(MDIR, fn))
    seen = set()
    for m in muts:
        if m["name"] in seen:
            raise MutantError("%s: mutant %s defined twice" % (m["where"], m["name"]))
        seen.add(m["name"])
    return muts


def apply(m, text):
    """TEXT with mutant M applied; the snippet must occur exactly once."""
    n = text.count(m["old"])
    if n != 1:
        raise MutantError("%s: mutant %s: its snippet occurs %d times in %s (must be once):\n%s"
                          % (m["where"], m["name"], n, m["file"], m["old"]))
    out = text.replace(m["old"], m["new"])
    if out == text:
        raise MutantError("%s: mutant %s changes nothing" % (m["where"], m["name"]))
    return out


def is_ft(m):
    return m["file"] == FT_ROOT or os.path.dirname(m["file"]) == FT_DIR


def ft_files():
    """The flow table's files: {name in the copy: path from the top}."""
    files = {"flow_table.rs": FT_ROOT}
    for fn in sorted(os.listdir(os.path.join(TOP, FT_DIR))):
        if fn.endswith(".rs"):
            files[fn] = os.path.join(FT_DIR, fn)
    return files


def ft_copy(m):
    """The flow table's files with M applied, as a module of a module
    crate: {name: text}. Nested modules of a file loaded through #[path]
    are looked up beside it, so the submodules sit beside the root."""
    out = {}
    for name, path in ft_files().items():
        with open(os.path.join(TOP, path), encoding="utf-8") as f:
            text = f.read()
        if path == m["file"]:
            text = apply(m, text)
        text = re.sub(r"\bcrate::", "kernel::", text)
        text = re.sub(r"(?<![:\w])bindings::", "kernel::bindings::", text)
        # Flags::as_raw() is the kernel crate's own (pub(crate)); the copy
        # reads the one u32 of the struct (inside the unsafe block of the
        # allocation call that takes it).
        text = text.replace("gfp.as_raw()", "core::mem::transmute::<kernel::alloc::Flags, u32>(gfp)")
        out[name] = text
    return out


def source(m):
    """The mutated module source of M."""
    if m["file"] != MODULE_SRC and not is_ft(m):
        raise MutantError("%s: mutant %s: only %s and the flow table can be mutated"
                          % (m["where"], m["name"], MODULE_SRC))
    with open(os.path.join(TOP, MODULE_SRC), encoding="utf-8") as f:
        src = f.read()
    if m["file"] == MODULE_SRC:
        src = apply(m, src)
    else:
        ft_copy(m)  # the snippet must apply
        if src.count(FT_USE) != 1:
            raise MutantError("%s: mutant %s: %s has no one %r" % (m["where"], m["name"], MODULE_SRC, FT_USE))
        src = src.replace(FT_USE, '#[path = "ft_%s/flow_table.rs"]\n#[allow(dead_code, unused_imports, unreachable_pub, clippy::all)]\nmod flow_table;\nuse crate::flow_table::{' % m["name"])
    src, n = MAX_FLOWS[0].subn(MAX_FLOWS[1], src)
    if n != 1:
        raise MutantError("%s: mutant %s: no FQ_MAX_FLOWS line to limit" % (m["where"], m["name"]))
    return src


def main(argv):
    muts = load()
    byname = {m["name"]: m for m in muts}
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd = argv[1]
    if cmd == "check":
        for m in muts:
            source(m)
        print("%d mutants apply" % len(muts))
    elif cmd == "select":
        names = [m["name"] for m in muts]
        if argv[2] != "all":
            # A sample (make check) is drawn from the mutants that must be
            # killed: an equivalent one runs every seed to survive, 40 s.
            pool = [m["name"] for m in muts if not m["equivalent"]]
            rng = random.Random(int(argv[3]) if len(argv) > 3 else 0)
            names = sorted(rng.sample(pool, min(int(argv[2]), len(pool))),
                           key=names.index)
        print("\n".join(names))
    elif cmd == "write":
        d = argv[2]
        os.makedirs(d, exist_ok=True)
        kbuild = ["# Generated by tools/rsnet/mutants.py: the mutants of %s." % MODULE_SRC]
        rows = []
        for name in argv[3:]:
            if name not in byname:
                raise MutantError("no mutant %s" % name)
            m = byname[name]
            mod = "fqm_" + name
            with open(os.path.join(d, mod + ".rs"), "w", encoding="utf-8") as f:
                f.write(source(m))
            if is_ft(m):
                ft = os.path.join(d, "ft_" + name)
                os.makedirs(ft, exist_ok=True)
                for fn, text in ft_copy(m).items():
                    with open(os.path.join(ft, fn), "w", encoding="utf-8") as f:
                        f.write(text)
            kbuild += ["obj-m += %s.o" % mod]
            rows.append("\t".join((name, mod, m["desc"], m["equivalent"])))
        with open(os.path.join(d, "Kbuild"), "w", encoding="utf-8") as f:
            f.write("\n".join(kbuild) + "\n")
        with open(os.path.join(d, "list"), "w", encoding="utf-8") as f:
            f.write("".join(r + "\n" for r in rows))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except MutantError as e:
        sys.exit("mutants: " + str(e))
