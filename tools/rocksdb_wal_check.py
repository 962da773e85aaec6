#!/usr/bin/env python3
"""Check a RocksDB write-ahead log file on its own, without RocksDB: every
physical record's masked CRC32C, the fragments assembled into logical
records, the payload stream decompressed (RocksDB's streaming zstd WAL
compression writes one zstd stream flushed at each record; the `zstd`
command decodes it), and each WriteBatch walked to its end.

    tools/rocksdb_wal_check.py DB/000243.log

Prints what it found and exits 0 when the log is whole (every record's
CRC holds, the stream decodes, every batch parses), 1 when it is not
(naming the offset), 2 on a usage error.  A whole log that RocksDB
refuses to replay is RocksDB's bug, not the disk's
(docs/findings/rocksdb-compressed-wal-refused-after-a-crash.md)."""

import struct
import subprocess
import sys

BLOCK = 32768
HEADER = 7
FULL, FIRST, MIDDLE, LAST, SET_COMPRESSION = 1, 2, 3, 4, 9
PUT, DELETE = 1, 0


def crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


TABLE = crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for x in data:
        c = TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def unmask(m):
    r = (m - 0xA282EAD8) & 0xFFFFFFFF
    return ((r >> 17) | (r << 15)) & 0xFFFFFFFF


def physical_records(data):
    """[(offset, type, payload)], and the offsets whose CRC fails."""
    off, recs, bad = 0, [], []
    while off < len(data):
        left = BLOCK - off % BLOCK
        if left < HEADER:
            off += left
            continue
        crc, length, kind = struct.unpack_from("<IHB", data, off)
        if length == 0 and kind == 0:
            off += left  # zeroed trailer or preallocated space
            continue
        if crc32c(data[off + 6 : off + HEADER + length]) != unmask(crc):
            bad.append(off)
        recs.append((off, kind, data[off + HEADER : off + HEADER + length]))
        off += HEADER + length
    return recs, bad


def logical_records(recs):
    """[(offset of its first fragment, payload)] and whether a compression
    record opened the log."""
    out, cur, compressed = [], None, False
    for off, kind, p in recs:
        if kind == SET_COMPRESSION:
            compressed = True
        elif kind == FULL:
            out.append((off, p))
        elif kind == FIRST:
            cur = (off, bytearray(p))
        elif kind in (MIDDLE, LAST) and cur is not None:
            cur[1].extend(p)
            if kind == LAST:
                out.append((cur[0], bytes(cur[1])))
                cur = None
    return out, compressed


def varint(b, i):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def walk_batches(u):
    """(batches, last sequence, None) or (..., the offset of a bad tag)."""
    i = n = 0
    last = None
    while i + 12 <= len(u):
        seq, count = struct.unpack_from("<QI", u, i)
        j = i + 12
        for _ in range(count):
            tag = u[j]
            j += 1
            if tag not in (PUT, DELETE):
                return n, last, i
            klen, j = varint(u, j)
            j += klen
            if tag == PUT:
                vlen, j = varint(u, j)
                j += vlen
        n, i, last = n + 1, j, seq
    return n, last, None if i == len(u) else i


def main(argv):
    if len(argv) != 2:
        print("usage: rocksdb_wal_check.py WAL_FILE", file=sys.stderr)
        return 2
    try:
        with open(argv[1], "rb") as f:
            data = f.read()
    except OSError as e:
        print("rocksdb_wal_check.py: %s" % e, file=sys.stderr)
        return 2
    recs, bad = physical_records(data)
    print("%d physical records, %d with a bad CRC %s" % (len(recs), len(bad), bad[:5]))
    logical, compressed = logical_records(recs)
    stream = b"".join(p for _, p in logical)
    if compressed:
        try:
            z = subprocess.run(["zstd", "-d", "-c"], input=stream, capture_output=True)
        except OSError as e:
            print("rocksdb_wal_check.py: zstd: %s (apt-get install zstd)" % e, file=sys.stderr)
            return 2
        print("zstd stream: exit %d, %d bytes" % (z.returncode, len(z.stdout)))
        if z.returncode:
            return 1
        stream = z.stdout
    n, last, at = walk_batches(stream)
    print("%d logical records, %d write batches, last sequence %s" % (len(logical), n, last))
    if at is not None:
        print(
            "a batch does not parse at byte %d of the %s payload"
            % (at, "decompressed" * compressed)
        )
    return 1 if bad or at is not None else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
