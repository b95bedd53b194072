#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""An XDP_PASS (or XDP_DROP) program on a device, for the rsnet page_pool
selftest and benchmark.

  xdp_pass.py attach DEV [drop]
                           load "r0 = XDP_PASS; exit" (XDP_DROP with drop)
                           with bpf(2) and attach it to DEV in native
                           (driver) mode
  xdp_pass.py detach DEV   remove the XDP program of DEV
  xdp_pass.py show DEV     print the id of the XDP program of DEV (0: none)

Run it in DEV's network namespace (ip netns exec). The program needs no
libbpf and no compiler: its two instructions are written here. An attached
program holds its own reference, so this process may exit once attached.
Raw rtnetlink, no pyroute2: its import alone took 25 s in the emulated guest.
"""
import ctypes
import os
import socket
import struct
import sys

SYS_BPF = {"x86_64": 321, "aarch64": 280}
BPF_PROG_LOAD = 5
BPF_PROG_TYPE_XDP = 6
XDP_DROP, XDP_PASS = 1, 2
XDP_FLAGS_DRV_MODE = 1 << 2
RTM_GETLINK, RTM_SETLINK = 18, 19
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2
NLA_F_NESTED = 0x8000
IFLA_XDP = 43
IFLA_XDP_FD, IFLA_XDP_FLAGS, IFLA_XDP_PROG_ID = 1, 3, 4
# struct ifinfomsg: family, pad, type, index, flags, change
IFINFO = struct.Struct("=BxHiII")

# struct bpf_insn: u8 code, u8 dst_reg:4 src_reg:4, s16 off, s32 imm
INSN = struct.Struct("<BBhi")


def prog(action):
    """The program: r0 = action; exit."""
    return (INSN.pack(0xB7, 0, 0, action)  # BPF_ALU64 | BPF_MOV | BPF_K
            + INSN.pack(0x95, 0, 0, 0))    # BPF_JMP | BPF_EXIT

# union bpf_attr, BPF_PROG_LOAD, up to expected_attach_type: prog_type,
# insn_cnt, insns, license, log_level, log_size, log_buf, kern_version,
# prog_flags, prog_name, prog_ifindex, expected_attach_type
ATTR = struct.Struct("<IIQQIIQII16sII")


def prog_load(action):
    """Returns the fd of a loaded program that returns action."""
    nr = SYS_BPF.get(os.uname().machine)
    if nr is None:
        raise SystemExit(f"bpf(2) number unknown for {os.uname().machine}")
    code = prog(action)
    insns = ctypes.create_string_buffer(code, len(code))
    lic = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(1 << 16)
    attr = ctypes.create_string_buffer(ATTR.pack(
        BPF_PROG_TYPE_XDP, len(code) // INSN.size, ctypes.addressof(insns),
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


def rtnl(mtype, flags, body):
    """One rtnetlink request with an ack; returns the reply messages' bodies
    (after the ack's errno is checked)."""
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    try:
        s.bind((0, 0))
        s.send(struct.pack("=IHHII", 16 + len(body), mtype,
                           flags | NLM_F_REQUEST | NLM_F_ACK, 1, 0) + body)
        replies = []
        while True:
            data = s.recv(1 << 16)
            off = 0
            while off + 16 <= len(data):
                n, t, _f, _seq, _pid = struct.unpack_from("=IHHII", data, off)
                if t == NLMSG_ERROR:
                    err = -struct.unpack_from("=i", data, off + 16)[0]
                    if err:
                        raise SystemExit(f"rtnetlink: {os.strerror(err)}")
                    return replies
                replies.append(data[off + 16:off + n])
                off += (n + 3) & ~3
    finally:
        s.close()


def nla(t, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, t) + payload + b"\0" * ((4 - n % 4) % 4)


def attrs(buf, off=0):
    """{type: payload} of the attributes in buf from off."""
    out = {}
    while off + 4 <= len(buf):
        n, t = struct.unpack_from("=HH", buf, off)
        if n < 4:
            break
        out[t & 0x3FFF] = buf[off + 4:off + n]
        off += (n + 3) & ~3
    return out


def set_xdp(idx, fd):
    """Attaches the program fd (-1: detaches) to ifindex idx, driver mode."""
    xdp = (nla(IFLA_XDP_FD, struct.pack("=i", fd))
           + nla(IFLA_XDP_FLAGS, struct.pack("=I", XDP_FLAGS_DRV_MODE)))
    rtnl(RTM_SETLINK, 0, IFINFO.pack(0, 0, idx, 0, 0)
         + nla(IFLA_XDP | NLA_F_NESTED, xdp))


def prog_id(idx):
    """The id of the XDP program on ifindex idx, 0 if none."""
    for body in rtnl(RTM_GETLINK, 0, IFINFO.pack(0, 0, idx, 0, 0)):
        xdp = attrs(body, IFINFO.size).get(IFLA_XDP)
        if xdp is not None:
            pid = attrs(xdp).get(IFLA_XDP_PROG_ID)
            return struct.unpack("=I", pid)[0] if pid else 0
    return 0


def main():
    args = sys.argv[1:]
    if (len(args) not in (2, 3) or args[0] not in ("attach", "detach", "show")
            or (len(args) == 3 and args[0:3:2] != ["attach", "drop"])):
        raise SystemExit(__doc__)
    cmd, dev = args[:2]
    action = XDP_DROP if len(args) == 3 else XDP_PASS
    try:
        idx = socket.if_nametoindex(dev)
    except OSError:
        raise SystemExit(f"no device {dev}") from None
    if cmd == "attach":
        fd = prog_load(action)
        set_xdp(idx, fd)
        os.close(fd)
        if not prog_id(idx):
            raise SystemExit(f"no XDP program on {dev} after attach")
    elif cmd == "detach":
        set_xdp(idx, -1)
        if prog_id(idx):
            raise SystemExit(f"XDP program still on {dev} after detach")
    else:
        print(prog_id(idx))
    return 0


if __name__ == "__main__":
    sys.exit(main())
