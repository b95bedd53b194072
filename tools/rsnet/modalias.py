#!/usr/bin/env python3
# modalias.py ALIAS MODULE.ko...: take ALIAS out of each module's .modinfo
# (its "alias=ALIAS" string becomes NUL bytes, which the kernel's and
# kmod's readers of .modinfo skip), in place; the rest of the file is left
# as it is. Prints each module it changed.
#
# rsnet builds out of tree the fq the kernel did not build (C's sch_fq.c
# beside an in-tree Rust fq, or the other way round) and the oracle's fq
# builds; none of them may answer tc's request_module("net-sch-fq"), which
# is the kernel's own fq's: with two modules of one alias modprobe loads
# both, and the first to register "fq" wins.
import struct
import sys


def modinfo_range(data):
    if data[:4] != b'\x7fELF' or data[4] != 2 or data[5] != 1:
        raise SystemExit('not a little-endian ELF64 file')
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)

    def section(i):
        name, _, _, _, off, size = struct.unpack_from('<IIQQQQ', data, shoff + i * shentsize)
        return name, off, size

    _, stroff, _ = section(shstrndx)
    for i in range(shnum):
        name, off, size = section(i)
        end = data.index(b'\0', stroff + name)
        if data[stroff + name:end] == b'.modinfo':
            return off, off + size
    raise SystemExit('no .modinfo section')


def main():
    alias, kos = sys.argv[1].encode(), sys.argv[2:]
    entry = b'alias=' + alias + b'\0'
    for ko in kos:
        with open(ko, 'rb') as f:
            data = bytearray(f.read())
        start, end = modinfo_range(data)
        info = bytes(data[start:end])
        pos, n = 0, 0
        while True:
            # An entry starts the section or follows a NUL.
            pos = info.find(entry, pos)
            if pos < 0:
                break
            if pos == 0 or info[pos - 1] == 0:
                data[start + pos:start + pos + len(entry)] = bytes(len(entry))
                n += 1
            pos += 1
        if n:
            with open(ko, 'wb') as f:
                f.write(data)
            print(f'{ko}: alias {alias.decode()} removed')


main()
