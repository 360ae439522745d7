"""The deterministic model input, and the output checksum, shared by firmware and host.

The firmware generates its input on the target with the same xorshift32 stream, so no input file
has to be linked or loaded, and the host reference recomputes the identical bytes here. The
definition (docs/firmware.md#input-generator) is:

* ``s = seed`` (default 0x9E3779B9); ``next(): s ^= s << 13; s ^= s >> 17; s ^= s << 5;
  return s`` on 32-bit unsigned arithmetic;
* one continuous stream over all interface inputs, in interface order, element by element (and
  on from one inference to the next, when a stateful plan runs several in a row);
* int8/uint8 element: ``(uint8_t)(next() >> 24)``; float32 element:
  ``(float)(int8_t)(next() >> 24) / 64.0f``; int32/int64 (index) element: ``next() >> 30``
  (0..3, inside any axis of 4 or more);
* the output checksum is FNV-1a 32 over the concatenated output bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

from .errors import TigrisError
from .plan import IoTensor

DEFAULT_SEED = 0x9E3779B9
_MASK = 0xFFFFFFFF


def xorshift32(seed: int = DEFAULT_SEED) -> Iterator[int]:
    """Endless xorshift32 stream (Marsaglia 13/17/5) starting from ``seed``.

    A zero seed would stay zero forever, so it is refused.
    """
    s = seed & _MASK
    if s == 0:
        raise TigrisError("input seed must not be 0 (xorshift32 would only produce zeros)")
    while True:
        s ^= (s << 13) & _MASK
        s ^= s >> 17
        s ^= (s << 5) & _MASK
        yield s


def generate_inputs(tensors: Iterable[IoTensor], seed: int = DEFAULT_SEED) -> list[bytes]:
    """Bytes of every interface input, in interface order, from one continuous stream."""
    return generate_run_inputs(tensors, seed, 1)[0]


def generate_run_inputs(tensors: Iterable[IoTensor], seed: int = DEFAULT_SEED, runs: int = 1) -> list[list[bytes]]:
    """The inputs of `runs` inferences in a row: the stream runs on from one to the next."""
    stream = xorshift32(seed)
    tensors = list(tensors)
    return [_next_inputs(tensors, stream) for _ in range(runs)]


def _next_inputs(tensors: list[IoTensor], stream: Iterator[int]) -> list[bytes]:
    result: list[bytes] = []
    for tensor in tensors:
        n = tensor.elements
        if tensor.dtype in (2, 3):  # uint8, int8: the top byte
            result.append(bytes((next(stream) >> 24) & 0xFF for _ in range(n)))
        elif tensor.dtype == 1:  # float32: signed top byte / 64, exact in binary
            values = []
            for _ in range(n):
                top = (next(stream) >> 24) & 0xFF
                values.append((top - 256 if top >= 128 else top) / 64.0)
            result.append(struct.pack(f"<{n}f", *values))
        elif tensor.dtype in (6, 7):  # int32, int64 indices: 0..3
            result.append(struct.pack(f"<{n}{'i' if tensor.dtype == 6 else 'q'}",
                                      *(next(stream) >> 30 for _ in range(n))))
        else:
            raise TigrisError(
                f"input {tensor.name!r} has dtype {tensor.dtype_name}; the deterministic input "
                "generator supports int8, uint8, float32 and int32/int64 index interfaces"
            )
    return result


def fnv1a32(data: bytes, state: int = 0x811C9DC5) -> int:
    """FNV-1a 32-bit hash; pass the previous result as ``state`` to continue over more bytes."""
    h = state
    for byte in data:
        h ^= byte
        h = (h * 0x01000193) & _MASK
    return h
