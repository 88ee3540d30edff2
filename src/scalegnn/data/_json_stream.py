"""Streaming readers of GraphSAINT's ``class_map.json`` and ``role.json`` into numpy arrays.

``json.load`` of a class map with 1.7e7 keys builds a dict of 1.7e7 str and int objects (about
3 GB); these readers parse the file in blocks of :data:`scalegnn.data._byte_stream.BLOCK`
bytes with numba kernels (digits as in :mod:`scalegnn.data._parse`) straight into the final
arrays:

* :func:`read_class_map` -> labels, int64 ``(n,)`` for ``{"<id>": <int>, ...}`` or float32
  ``(n, C)`` for ``{"<id>": [0/1, ... C values], ...}``, row = node id. Extra memory: one
  byte per node (which ids were seen) and a block.
* :func:`read_roles` -> the ``"tr"``, ``"va"``, ``"te"`` int64 id arrays (views of one array).

Both answer the exact result of the ``json.load`` path or None: the fast path takes only
plain JSON of the expected shape (any key order, JSON whitespace anywhere) with non-negative
integers written without sign, leading zeros, fraction or exponent; for anything else (floats
such as ``1.0``, strings, other keys, invalid or truncated JSON...) it answers None and the
caller takes the ``json.load`` path, which accepts or refuses with its own message. Errors the
fast path raises itself are one-line :class:`DataError` naming the file: a node id out of
range or given twice, a wrong number of ids (messages as the json path's where it has one).
"""

from __future__ import annotations

import json
import re

import numba as nb
import numpy as np

from scalegnn.data._byte_stream import Growable, _chunks
from scalegnn.data._parse import _CR, _JIT, _SP, _TAB, LF, OK, SLOW, digits
from scalegnn.errors import DataError

NEED, DUP, RANGE = 5, 6, 7  # kernel statuses beyond _parse's: block ended mid-unit, bad ids
# the first key and the start of its value: '[' means multi-label
_FIRST = re.compile(rb'\A[ \t\r\n]*\{[ \t\r\n]*"[0-9]+"[ \t\r\n]*:[ \t\r\n]*(\[[^\]]*\]|[0-9])')


@nb.njit(inline="always")
def _ws(buf, p, end):
    while p < end and (buf[p] == _SP or buf[p] == LF or buf[p] == _CR or buf[p] == _TAB):
        p += 1
    return p


@nb.njit(inline="always")
def _uint(buf, p, end):
    """(status, value, p after it) of a JSON integer >= 0 at ``p``: NEED when it runs into the
    block's end, SLOW for a sign, a leading zero, a fraction, an exponent or > 18 digits."""
    ok, v, q = digits(buf, p)
    if q >= end:
        return NEED, 0, q
    if not ok or (buf[p] == 48 and q - p > 1) or buf[q] == 46 or buf[q] == 101 or buf[q] == 69:
        return SLOW, 0, q
    return OK, v, q


@nb.njit(**_JIT)
def class_map_block(buf, end, p, state, single, multi, seen):
    """Parse ``buf[p:end]`` (``buf[end]`` is a sentinel) of a class map into ``single[id]``
    (``multi`` has no rows) or ``multi[id, :]``; ``seen[id]`` marks ids done.

    ``state`` = [phase, entries, bad id]; phases 0: before '{', 1: after '{', 2: after ',',
    3: after an entry, 4: after '}'. Returns (status, p): OK with every byte consumed, NEED
    with ``p`` at an entry cut by the block's end (to be parsed again with more bytes), SLOW,
    or DUP/RANGE with the id in ``state[2]``."""
    n = seen.size
    ncls = multi.shape[1] if multi.shape[0] else 0
    phase, count = state[0], state[1]
    status = OK
    while True:
        p = _ws(buf, p, end)
        if p >= end:
            break
        c = buf[p]
        if phase == 0 or phase == 3 or phase == 4:
            if phase == 0 and c == 123:  # '{'
                phase = 1
            elif phase == 3 and c == 44:  # ','
                phase = 2
            elif phase == 3 and c == 125:  # '}'
                phase = 4
            else:
                status = SLOW
                break
            p += 1
            continue
        if phase == 1 and c == 125:
            phase, p = 4, p + 1
            continue
        if c != 34:  # '"': an entry '"id": value' follows
            status = SLOW
            break
        s, node, q = _uint(buf, p + 1, end)
        if s == OK and buf[q] != 34:
            s = SLOW
        if s == OK:
            if node >= n or seen[node]:
                state[2] = node
                status = RANGE if node >= n else DUP
                break
            q = _ws(buf, q + 1, end)
            s = NEED if q >= end else OK if buf[q] == 58 else SLOW  # ':'
            q = _ws(buf, q + 1, end)
            s = NEED if s == OK and q >= end else s
        if s == OK and ncls == 0:
            s, v, q = _uint(buf, q, end)
            if s == OK:
                single[node] = v
        elif s == OK:
            s = OK if buf[q] == 91 else SLOW  # '['
            q += 1
            for j in range(ncls):
                if s != OK:
                    break
                q = _ws(buf, q, end)
                if j and q < end:
                    s = OK if buf[q] == 44 else SLOW
                    q = _ws(buf, q + 1, end)
                if s == OK and q + 1 >= end:
                    s = NEED
                elif s == OK and (buf[q] == 48 or buf[q] == 49) \
                        and not (48 <= buf[q + 1] <= 57 or buf[q + 1] == 46
                                 or buf[q + 1] == 101 or buf[q + 1] == 69):
                    multi[node, j] = buf[q] - 48
                    q += 1
                elif s == OK:
                    s = SLOW  # not 0/1 (json decides: an error or 1.0 and the like)
            if s == OK:
                q = _ws(buf, q, end)
                s = NEED if q >= end else OK if buf[q] == 93 else SLOW  # ']': exactly C
                q += 1
        if s != OK:
            status = s
            break
        seen[node] = 1
        count += 1
        phase, p = 3, q
    state[0], state[1] = phase, count
    return status, p


@nb.njit(**_JIT)
def roles_block(buf, end, p, state, segs, out, k):
    """Parse ``buf[p:end]`` of a role.json into ``out[k:]``; ``segs[r]`` = [start, stop] of the
    list of key r (0 'tr', 1 'va', 2 'te'; start -1 until met). ``state`` = [phase, key];
    phases 0: before '{', 1: after '{', 2: after ',', 3: after a list, 4: after '}', 5: after
    '[', 6: after a list item. Returns (status, p, k) as :func:`class_map_block`."""
    phase, key = state[0], state[1]
    status = OK
    while True:
        p = _ws(buf, p, end)
        if p >= end:
            break
        c = buf[p]
        q = p + 1
        s = OK
        if phase == 0 or phase == 3 or phase == 4:
            if phase == 0 and c == 123:
                phase = 1
            elif phase == 3 and c == 44:
                phase = 2
            elif phase == 3 and c == 125:
                phase = 4
            else:
                s = SLOW
        elif phase == 1 and c == 125:
            phase = 4
        elif phase == 1 or phase == 2:  # '"tr"' ws ':' ws '['
            if q + 2 >= end:
                s = NEED
            elif c != 34 or buf[q + 2] != 34:
                s = SLOW
            else:
                a, b = buf[q], buf[q + 1]
                r = 0 if a == 116 and b == 114 else 1 if a == 118 and b == 97 else \
                    2 if a == 116 and b == 101 else -1
                if r < 0 or segs[r, 0] >= 0:  # another key, or twice: json decides
                    s = SLOW
                q = _ws(buf, q + 3, end)
                s = NEED if s == OK and q >= end else s
                s = SLOW if s == OK and buf[q] != 58 else s
                q = _ws(buf, q + 1, end)
                s = NEED if s == OK and q >= end else s
                s = SLOW if s == OK and buf[q] != 91 else s
                if s == OK:
                    key, phase = r, 5
                    segs[r, 0] = k
                    q += 1
        elif phase == 6 and c == 44 or phase == 5 and c != 93:  # [','] id
            if phase == 6:
                q = _ws(buf, q, end)
            else:
                q = p
            s, v, q = _uint(buf, q, end)
            if s == OK:
                out[k] = v
                k += 1
                phase = 6
        elif c == 93:  # ']'
            segs[key, 1] = k
            phase = 3
        else:
            s = SLOW
        if s != OK:
            status = s
            break
        p = q
    state[0], state[1] = phase, key
    return status, p, k


def _blocks(path, what):
    """(bytes with a NUL sentinel appended, is last) of ``path`` in blocks of about BLOCK;
    the caller hands back the unparsed tail of a block to prefix the next one."""
    carry = b""
    chunks = _chunks(path, what)
    data = next(chunks, b"")
    while True:
        nxt = next(chunks, None)
        tail = yield np.frombuffer(carry + data + b"\0", np.uint8), nxt is None
        if nxt is None:
            return
        carry, data = tail or b"", nxt


def _first_value(path) -> tuple[bool, int] | None:
    """(multi-label, C) from the class map's first entry; None when the fast path is out."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 20)
    except OSError:  # the json path names the reason
        return None
    m = _FIRST.match(head)
    if m is None:
        return None
    if m.group(1)[:1] != b"[":
        return False, 0
    try:
        first = json.loads(m.group(1))
    except ValueError:
        return None
    if not first or not all(type(v) is int and v in (0, 1) for v in first):
        return None
    return True, len(first)


def read_class_map(path, n: int) -> np.ndarray | None:
    """Labels of a class map (see the module docstring), or None for the json path."""
    kind = _first_value(path) if n else None
    if kind is None:
        return None
    multi, ncls = kind
    single = np.empty(n if not multi else 0, np.int64)
    rows = np.zeros((n, ncls) if multi else (0, 1), np.float32)
    seen = np.zeros(n, np.uint8)
    state = np.zeros(3, np.int64)
    gen = _blocks(path, "class map")
    buf, last = next(gen)
    while True:
        status, p = class_map_block(buf, buf.size - 1, 0, state, single, rows, seen)
        if status == RANGE:
            raise DataError(f"{path}: node id {state[2]} is out of range for {n} nodes")
        if status == DUP:
            raise DataError(f"{path}: node id {state[2]} appears twice among the keys")
        if status == SLOW or last:
            break
        buf, last = gen.send(buf[p:-1].tobytes() if status == NEED else b"")
    if status != OK or state[0] != 4:  # SLOW, or the file ends early
        return None
    if state[1] != n:
        raise DataError(f"{path}: has labels for {state[1]} nodes, the graph has {n}")
    return rows if multi else single


def read_roles(path, n: int) -> list[np.ndarray] | None:
    """[tr, va, te] int64 ids of a role.json, range-checked, or None for the json path."""
    segs = np.full((3, 2), -1, np.int64)
    state = np.zeros(2, np.int64)
    out = Growable(np.int64, 1 << 16)
    k = 0
    gen = _blocks(path, "role file")
    buf, last = next(gen)
    while True:
        need = k + buf.size // 2 + 4  # an id takes two bytes ('1,'), but the first of a list
        if need > out.size:
            out.resize(max(need, 2 * out.size))
        status, p, k = roles_block(buf, buf.size - 1, 0, state, segs, out.array(), k)
        if status == SLOW or last:
            break
        buf, last = gen.send(buf[p:-1].tobytes() if status == NEED else b"")
    if status != OK or state[0] != 4 or (segs < 0).any():
        return None
    out.resize(max(k, 1))
    ids = out.array()
    result = []
    for key, (start, stop) in zip(("tr", "va", "te"), segs.tolist()):
        idx = ids[start:stop]
        if idx.size and idx.max() >= n:
            raise DataError(f"{path}: node id {idx.max()} in {key!r} is out of range for "
                            f"{n} nodes")
        result.append(idx)
    return result
