"""Malformed message bytes for the hardening tests: every mutation of a valid serialized
message that a hostile or broken publisher can send (another encapsulation, a random first
byte, truncation, bit flips, counts and lengths made huge, random bytes)."""
from __future__ import annotations

import random

#: the two bytes of every encapsulation identifier the tests try besides plain CDR
FOREIGN = [bytes((0, b)) for b in (0x02, 0x03, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x40, 0xff)]
#: four bytes that crash the rmw's own deserializer (rclpy's deserialize_message) on a JointState
CRASHER = b'\x00\x02\x81\xa1'


def mutations(good: bytes, count: int, seed: int):
    """``count`` malformed variants of ``good`` (serialized, plain CDR), then every truncation
    and every 4-byte-aligned count made huge."""
    rng = random.Random(seed)
    yield CRASHER
    for cut in range(len(good)):
        yield good[:cut]
    for at in range(4, len(good) - 3, 4):
        for huge in (b'\xff\xff\xff\xff', b'\xff\xff\xff\x7f', b'\x00\x00\x01\x00'):
            yield good[:at] + huge + good[at + 4:]
    for k in range(count):
        kind = k % 5
        data = bytearray(good)
        if kind in (0, 1):          # bit flips, maybe under another encapsulation
            for _ in range(rng.randint(1, 6)):
                i = rng.randrange(4, len(data)) if len(data) > 4 else 0
                data[i] ^= 1 << rng.randrange(8)
            if kind == 1:
                data[0:2] = rng.choice(FOREIGN)
        elif kind == 2:             # a valid body under another encapsulation or first byte
            if rng.random() < 0.3:
                data[0] = rng.randrange(1, 256)
            else:
                data[0:2] = rng.choice(FOREIGN)
        elif kind == 3:             # random bytes, half with a plausible header
            data = bytearray(rng.getrandbits(8) for _ in range(rng.randint(0, 300)))
            if rng.random() < 0.5 and len(data) >= 2:
                data[0:2] = rng.choice([b'\x00\x01', b'\x00\x00'] + FOREIGN)
        else:                       # a random 4 bytes somewhere, then cut short
            at = rng.randrange(4, max(5, len(data) - 4))
            data[at:at + 4] = bytes(rng.getrandbits(8) for _ in range(4))
            data = data[:rng.randint(4, len(data))]
        yield bytes(data)
