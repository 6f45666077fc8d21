"""The messages of an MCAP file (rosbag2's default storage), chunk by chunk, as byte tables: a
chunk's bytes and, for the messages of the channels asked for, their offsets, lengths, channels
and log times. No Python object per message: the records are walked by a compiled loop
(kernels.mcap_records), so reading costs about what decompressing does.

Only what rosbag2 writes is read here: a file with a summary section (channels and chunk
indexes), chunks uncompressed, zstd or lz4, in log-time order. Any other file raises
:class:`Unsupported` and logs.py reads it with rosbags' reader instead (same messages, same
order: rosbags sorts each chunk's messages by log time and merges the chunks, which for chunks
in time order is the stable sort by log time this reader does).

MCAP: https://mcap.dev/spec (records: opcode u8, length u64, content; little-endian).
"""
from __future__ import annotations

import struct
import sys
import zlib

import numpy as np

from . import kernels

MAGIC = b'\x89MCAP0\r\n'
OP_FOOTER, OP_CHUNK_INDEX, OP_STATISTICS = 0x02, 0x08, 0x0B


class Unsupported(Exception):
    """A file this reader leaves to rosbags (unchunked, unindexed, chunks out of time order,
    an unknown compression)."""


class Corrupt(Exception):
    """A file whose bytes contradict its own structure (truncated, a bad checksum)."""


class McapFile:
    """An MCAP file's channels and chunk index, and its messages chunk by chunk."""

    def __init__(self, path):
        self.path = str(path)
        self.file = open(self.path, 'rb')
        try:
            self._read_summary()
        except BaseException:
            self.file.close()
            raise

    def close(self):
        self.file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the summary: channels, counts, chunk index -------------------------------------
    def _read_summary(self):
        f = self.file
        f.seek(0, 2)
        size = f.tell()
        f.seek(0)
        if size < 2 * len(MAGIC) + 29 or f.read(len(MAGIC)) != MAGIC:
            raise Corrupt('no MCAP magic at the start')
        f.seek(size - len(MAGIC) - 29)
        footer = f.read(29 + len(MAGIC))
        if footer[-len(MAGIC):] != MAGIC or footer[0] != OP_FOOTER:
            raise Corrupt('no MCAP footer and magic at the end (a recording cut short?)')
        summary_start, = struct.unpack_from('<Q', footer, 9)
        if summary_start == 0:
            raise Unsupported('no summary section')
        f.seek(summary_start)
        summary = f.read(size - len(MAGIC) - 29 - summary_start)
        self.schemas, self.channels, self.counts, chunks = {}, {}, {}, []
        at = 0
        while at < len(summary):
            op = summary[at]
            length, = struct.unpack_from('<Q', summary, at + 1)
            body = memoryview(summary)[at + 9:at + 9 + length]
            at += 9 + length
            if op == kernels.OP_SCHEMA:
                sid, = struct.unpack_from('<H', body, 0)
                name, _ = _string(body, 2)
                self.schemas[sid] = name
            elif op == kernels.OP_CHANNEL:
                cid, sid = struct.unpack_from('<HH', body, 0)
                topic, p = _string(body, 4)
                encoding, p = _string(body, p)
                self.channels[cid] = (topic, sid, encoding)
            elif op == OP_STATISTICS:
                p = 8 + 2 + 4 * 4 + 16
                length, = struct.unpack_from('<I', body, p)
                for cid, count in struct.iter_unpack('<HQ', body[p + 4:p + 4 + length]):
                    self.counts[cid] = count
            elif op == OP_CHUNK_INDEX:
                start_time, end_time, offset, chunk_length = struct.unpack_from('<QQQQ', body)
                length, = struct.unpack_from('<I', body, 32)
                channels = {cid for cid, _ in struct.iter_unpack('<HQ', body[36:36 + length])}
                p = 36 + length + 8
                compression, p = _string(body, p)
                chunks.append((offset, start_time, end_time, chunk_length, compression, channels))
        if not chunks:
            raise Unsupported('no chunk index')
        chunks.sort()
        for previous, chunk in zip(chunks, chunks[1:]):
            if chunk[1] < previous[2]:
                raise Unsupported('chunks overlap in time')
        for chunk in chunks:
            if chunk[4] not in ('', 'zstd', 'lz4'):
                raise Unsupported(f'chunk compression {chunk[4]!r}')
        self.chunk_index = chunks

    def channel_ids(self, topic):
        """The ids of the channels that carry ``topic``."""
        return sorted(cid for cid, (name, _, _) in self.channels.items() if name == topic)

    # ---- messages -------------------------------------------------------------------------
    def chunks(self, channel_ids):
        """Per chunk that holds any of ``channel_ids``: (buf, channel, log_time, at, size),
        buf the chunk's records (uint8) and, for each of its messages on those channels in
        log-time order (stable), its channel id, log time (ns) and data's offset and length in
        buf."""
        wanted = np.array(sorted(channel_ids), dtype=np.int64)
        for offset, _, _, chunk_length, compression, channels in self.chunk_index:
            if not channels & set(channel_ids):
                continue
            buf = self._chunk(offset, chunk_length, compression)
            count = kernels.mcap_records(buf, 0, buf.size, *([_NONE] * 5))
            if count < 0:
                raise Corrupt(f'a record in the chunk at byte {offset} runs past its end')
            op, at, size, channel, log_time = (np.empty(count, np.int64) for _ in range(5))
            kernels.mcap_records(buf, 0, buf.size, op, at, size, channel, log_time)
            keep = np.flatnonzero((op == kernels.OP_MESSAGE) & np.isin(channel, wanted))
            if keep.size == 0:
                continue
            order = keep[np.argsort(log_time[keep], kind='stable')]
            # a message record's content: channel u16, sequence u32, log and publish time u64,
            # then the data
            yield buf, channel[order], log_time[order], at[order] + 22, size[order] - 22

    def _chunk(self, offset, chunk_length, compression):
        f = self.file
        f.seek(offset)
        record = np.empty(chunk_length, np.uint8)
        if f.readinto(record) != chunk_length or record[0] != kernels.OP_CHUNK:
            raise Corrupt(f'the chunk at byte {offset} is cut short')
        raw = record.data
        uncompressed_size, crc = struct.unpack_from('<QI', raw, 9 + 16)
        name_length, = struct.unpack_from('<I', raw, 9 + 28)
        p = 9 + 32 + name_length
        records_length, = struct.unpack_from('<Q', raw, p)
        p += 8
        if p + records_length > chunk_length:
            raise Corrupt(f'the chunk at byte {offset} is cut short')
        data = record[p:p + records_length]
        if compression:         # (into a writable array: the kernels take one kind of buffer)
            data = np.frombuffer(bytearray(_decompress(compression, data, uncompressed_size)),
                                 np.uint8)
        if data.size != uncompressed_size:
            raise Corrupt(f'the chunk at byte {offset} holds {data.size} bytes, its header says '
                          f'{uncompressed_size}')
        if crc and zlib.crc32(data) != crc:
            raise Corrupt(f'the chunk at byte {offset} fails its checksum')
        return data


_NONE = np.zeros(0, np.int64)


def _string(body, p):
    length, = struct.unpack_from('<I', body, p)
    return bytes(body[p + 4:p + 4 + length]).decode('utf-8', 'replace'), p + 4 + length


def _decompress(compression, data, size):
    """A chunk's records, decompressed with the libraries rosbags itself reads MCAP with."""
    if compression == 'zstd':
        if sys.version_info >= (3, 14):
            from compression import zstd
        else:
            from backports import zstd
        return zstd.decompress(data)
    import lz4.frame
    return lz4.frame.decompress(data)
