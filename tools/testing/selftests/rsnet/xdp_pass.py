#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""An XDP_PASS program on a device, for the rsnet page_pool selftest.

  xdp_pass.py attach DEV   load "r0 = XDP_PASS; exit" with bpf(2) and attach
                           it to DEV in native (driver) mode
  xdp_pass.py detach DEV   remove the XDP program of DEV
  xdp_pass.py show DEV     print the id of the XDP program of DEV (0: none)

Run it in DEV's network namespace (ip netns exec). The program needs no
libbpf and no compiler: its two instructions are written here. An attached
program holds its own reference, so this process may exit once attached.
"""
import ctypes
import os
import struct
import sys

from pyroute2 import IPRoute

SYS_BPF = {"x86_64": 321, "aarch64": 280}
BPF_PROG_LOAD = 5
BPF_PROG_TYPE_XDP = 6
XDP_PASS = 2
XDP_FLAGS_DRV_MODE = 1 << 2

# struct bpf_insn: u8 code, u8 dst_reg:4 src_reg:4, s16 off, s32 imm
INSN = struct.Struct("<BBhi")
PROG = (INSN.pack(0xB7, 0, 0, XDP_PASS)  # BPF_ALU64 | BPF_MOV | BPF_K: r0 = 2
        + INSN.pack(0x95, 0, 0, 0))      # BPF_JMP | BPF_EXIT
# union bpf_attr, BPF_PROG_LOAD, up to expected_attach_type: prog_type,
# insn_cnt, insns, license, log_level, log_size, log_buf, kern_version,
# prog_flags, prog_name, prog_ifindex, expected_attach_type
ATTR = struct.Struct("<IIQQIIQII16sII")


def prog_load():
    """Returns the fd of a loaded XDP_PASS program."""
    nr = SYS_BPF.get(os.uname().machine)
    if nr is None:
        raise SystemExit(f"bpf(2) number unknown for {os.uname().machine}")
    insns = ctypes.create_string_buffer(PROG, len(PROG))
    lic = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(1 << 16)
    attr = ctypes.create_string_buffer(ATTR.pack(
        BPF_PROG_TYPE_XDP, len(PROG) // INSN.size, ctypes.addressof(insns),
        ctypes.addressof(lic), 1, len(log), ctypes.addressof(log), 0, 0,
        b"rsnet_xdp_pass", 0, 0), ATTR.size)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(ctypes.c_long(nr), ctypes.c_long(BPF_PROG_LOAD), attr,
                      ctypes.c_long(ATTR.size))
    if fd < 0:
        err = ctypes.get_errno()
        raise SystemExit(f"BPF_PROG_LOAD: {os.strerror(err)}\n"
                         f"{log.value.decode(errors='replace')}")
    return fd


def ifindex(ipr, dev):
    idx = ipr.link_lookup(ifname=dev)
    if not idx:
        raise SystemExit(f"no device {dev}")
    return idx[0]


def prog_id(ipr, idx):
    link = ipr.link("get", index=idx)[0]
    xdp = link.get_attr("IFLA_XDP")
    if xdp is None:
        return 0
    return xdp.get_attr("IFLA_XDP_PROG_ID") or 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("attach", "detach", "show"):
        raise SystemExit(__doc__)
    cmd, dev = sys.argv[1:]
    with IPRoute() as ipr:
        idx = ifindex(ipr, dev)
        if cmd == "attach":
            fd = prog_load()
            ipr.link("set", index=idx,
                     xdp={"attrs": [("IFLA_XDP_FD", fd),
                                    ("IFLA_XDP_FLAGS", XDP_FLAGS_DRV_MODE)]})
            os.close(fd)
            if not prog_id(ipr, idx):
                raise SystemExit(f"no XDP program on {dev} after attach")
        elif cmd == "detach":
            ipr.link("set", index=idx,
                     xdp={"attrs": [("IFLA_XDP_FD", -1),
                                    ("IFLA_XDP_FLAGS", XDP_FLAGS_DRV_MODE)]})
            if prog_id(ipr, idx):
                raise SystemExit(f"XDP program still on {dev} after detach")
        else:
            print(prog_id(ipr, idx))
    return 0


if __name__ == "__main__":
    sys.exit(main())
