/*
 * rocksdb_log.h -- a RocksDB log file (a write-ahead log or a MANIFEST:
 * both are written in one format) read on its own, without RocksDB, to
 * place a corruption RocksDB reports without naming a file.
 *
 * RocksDB's "Corruption: checksum mismatch" from a log's or a manifest's
 * replay names no file, and only a read-write open writes the info-log
 * line that does ("NNNNNN.log: dropping N bytes"); a read-only open (the
 * adapter's verify of a closed directory) and a manifest's replay write
 * none.  The adapter then asks this reader where a record fails its
 * check, and reports there; with no such record it names no place.
 *
 * The format (RocksDB's wiki, Write-Ahead-Log-File-Format): the file is
 * cut into 32 KiB blocks; a block holds physical records, each a 7-byte
 * header and its payload, never crossing into the next block:
 *
 *   +---------+-----------+--------+----------------------+
 *   | crc (4) | len (2)   | type 1 | payload (len bytes)  |
 *   +---------+-----------+--------+----------------------+
 *   crc: masked CRC32C of the type byte and the payload, little-endian;
 *   len: little-endian.  Fewer than 7 bytes left in a block are padding.
 *   A header of type 0 and length 0 is preallocated space: the rest of
 *   the block is skipped.  Recyclable types (5-8) carry a 4-byte log
 *   number after the type (an 11-byte header) that the CRC also covers;
 *   the adapter does not recycle logs, but the reader knows them.
 *
 * Invariants:
 *   RL1  a record whose length runs past its block, or past the file's
 *        end, is no CRC failure (a torn tail or a bad length: RocksDB
 *        reports those in other words) and ends the walk;
 *   RL2  the first record whose CRC fails is the answer; its range is the
 *        header's offset up to the payload's end.
 */
#ifndef STRESS_ROCKSDB_LOG_H
#define STRESS_ROCKSDB_LOG_H

#include <stdint.h>

/* The first record of the log file at PATH whose CRC fails (RL2): 1 with
 * its range [*OFF, *OFF + *LEN) in the file, 0 when every record holds,
 * -1 when the file cannot be read. */
int st_rocksdb_log_bad_record(const char *path, uint64_t *off, uint64_t *len);

#endif
