#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Byte-exact TCP transfers for the rsnet selftests.

  tcp_xfer.py serve ADDR PORT              serve until killed
  tcp_xfer.py send ADDR PORT MODE SIZE...  one connection per SIZE

MODE is send (plain send), zerocopy (MSG_ZEROCOPY, completions reaped from
the error queue) or sendfile. Each connection starts with a header giving
the length and SHA-256 of the payload; the server checks both and answers
OK or BAD. The sender exits 1 on any BAD answer or error, and prints one
line per transfer.
"""
import hashlib
import os
import random
import socket
import struct
import sys
import tempfile
import threading
import time

HDR = struct.Struct("!Q32s")
SO_ZEROCOPY = 60
MSG_ZEROCOPY = 0x4000000


def recv_exact(conn, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(min(1 << 20, n - len(buf)))
        if not chunk:
            raise EOFError("short read")
        buf += chunk
    return bytes(buf)


def handle(conn):
    with conn:
        length, digest = HDR.unpack(recv_exact(conn, HDR.size))
        h = hashlib.sha256()
        left = length
        while left:
            chunk = conn.recv(min(1 << 20, left))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
        conn.sendall(b"OK" if left == 0 and h.digest() == digest else b"BAD")


def serve(addr, port):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    srv = socket.socket(fam, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
    srv.listen(64)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def reap_zerocopy(sock):
    # Completions arrive on the error queue; read them so the kernel can
    # release the pinned user pages.
    try:
        while True:
            sock.recvmsg(1, 1024, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        pass


def connect(addr, port):
    # The server was started a second ago; under emulation its Python may
    # not listen yet (CI once saw ECONNREFUSED): retry for up to 30 s.
    deadline = time.monotonic() + 30
    while True:
        try:
            return socket.create_connection((addr, port), timeout=60)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def send_one(addr, port, mode, size, rnd):
    payload = rnd.randbytes(size)
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    with connect(addr, port) as s:
        s.settimeout(None)  # blocking: sendfile() and MSG_ERRQUEUE need it
        s.sendall(HDR.pack(size, hashlib.sha256(payload).digest()))
        if mode == "send":
            s.sendall(payload)
        elif mode == "zerocopy":
            s.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
            view = memoryview(payload)
            while view:
                n = s.send(view[:1 << 16], MSG_ZEROCOPY)
                view = view[n:]
                reap_zerocopy(s)
        elif mode == "sendfile":
            with tempfile.TemporaryFile() as f:
                f.write(payload)
                f.flush()
                off = 0
                while off < size:
                    off += os.sendfile(s.fileno(), f.fileno(), off, size - off)
        else:
            raise SystemExit(f"unknown mode {mode}")
        s.shutdown(socket.SHUT_WR)
        answer = recv_exact(s, 2)
        if mode == "zerocopy":
            reap_zerocopy(s)
        return answer == b"OK"


def main():
    if sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
        return 0
    _, _, addr, port, mode, *sizes = sys.argv
    rnd = random.Random(0x72736E6574)
    ok = True
    for size in map(int, sizes):
        good = send_one(addr, int(port), mode, size, rnd)
        print(f"{mode} {size} {'OK' if good else 'BAD'}")
        ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
