"""Numba kernels that parse numbers out of text blocks (used by :mod:`scalegnn.data._stream`;
:func:`digits` also by :mod:`scalegnn.data._json_stream`).

A block is a ``uint8`` array ending with ``\\n``. Lines: blank lines and lines starting with
``#`` or ``%`` are skipped, ``\\r\\n`` ends are accepted, spaces around separators are ignored;
``sep`` 0 means "runs of spaces/tabs". Kernels return a status (OK, BAD_TOKEN, BAD_COLUMNS,
SLOW) and a byte position, so the caller can name the line and token of a bad value.

Numbers are exact: :func:`_number` computes a float64 only in Clinger's exact cases (<= 18
significant digits, mantissa <= 2^53, power of ten within 10^+-22) and answers SLOW for every
other token (the caller uses Python's ``float``); for a float32 target it also accepts
``float(w) * 10^e`` (error < 2 float64 ulps) when that lies more than 8 ulps from a float32
rounding midpoint, so the stored value equals ``np.float32(float(token))`` for every token.
"""

from __future__ import annotations

import numba as nb
import numpy as np

_JIT = dict(nogil=True, cache=True)
LF, _CR, _SP, _TAB = 10, 13, 32, 9
OK, BAD_TOKEN, BAD_COLUMNS, SLOW, FULL = 0, 1, 2, 3, 4
_MAX_ID = 2**53
P10 = np.array([float(f"1e{i}") for i in range(-100, 61)])  # 10^i at [i + 100], each exact-rounded


@nb.njit(inline="always")
def _skip_blank(buf, p, sep):
    while buf[p] == _SP or (buf[p] == _TAB and sep != _TAB):  # the block's final \n stops it
        p += 1
    return p


@nb.njit(inline="always")
def _ends_token(c, sep):
    return c == LF or c == _CR or c == _SP or c == _TAB or c == sep or c == 35 or c == 37


@nb.njit(inline="always")
def digits(buf, p):
    """(ok, value, p after the digits) of the decimal digits at ``p``: ok when there are 1 to
    18 of them and the value is below 2^53 (the ids and labels a float64 holds exactly)."""
    start = p
    v = 0
    while True:
        d = np.int64(buf[p]) - 48
        if d < 0 or d > 9:
            break
        v = v * 10 + d  # may wrap past 18 digits: such a token is refused below
        p += 1
    return p > start and p - start <= 18 and v < _MAX_ID, v, p


@nb.njit(inline="always")
def _int_token(buf, p, sep):
    """(status, value, p after it) of an integer token at ``p`` (status BAD_TOKEN: not one)."""
    neg = False
    if buf[p] == 45 or buf[p] == 43:
        neg = buf[p] == 45
        p += 1
    ok, v, p = digits(buf, p)
    if not ok or not _ends_token(buf[p], sep):
        return BAD_TOKEN, 0, p
    return OK, -v if neg else v, p


@nb.njit(**_JIT)
def edge_keys(buf, sep, keys, k, stats, extra_ok):
    """Parse ``u sep v [...]`` lines of ``buf`` into ``keys[k:]``; returns (k, status, pos).
    More columns are ignored when ``extra_ok`` (weights), else refused (BAD_COLUMNS).

    ``stats`` = [min id, max id, lines, self-loops] is updated; ids outside [0, 2^32 - 1) are
    kept out of ``keys`` (their min/max make the caller refuse the file)."""
    n = buf.size
    p = 0
    lo_id, hi_id, lines, loops = stats[0], stats[1], stats[2], stats[3]
    while p < n:
        p = _skip_blank(buf, p, sep)
        c = buf[p]
        if c == LF or c == _CR or c == 35 or c == 37:  # blank line or comment
            while buf[p] != LF:
                p += 1
            p += 1
            continue
        status, u, q = _int_token(buf, p, sep)
        if status != OK:
            return k, BAD_TOKEN, p
        p = _skip_blank(buf, q, sep)
        c = buf[p]
        if c == LF or c == _CR or c == 35 or c == 37:
            return k, BAD_COLUMNS, p
        if sep != 0:
            if c != sep:  # e.g. '1 2' in a comma-separated file
                return k, BAD_COLUMNS, p
            p = _skip_blank(buf, p + 1, sep)
            c = buf[p]
            if c == LF or c == _CR or c == 35 or c == 37 or c == sep:
                return k, BAD_COLUMNS, p
        status, w, q = _int_token(buf, p, sep)
        if status != OK:
            return k, BAD_TOKEN, p
        p = _skip_blank(buf, q, sep)
        if not extra_ok and buf[p] != LF and buf[p] != _CR and buf[p] != 35 and buf[p] != 37:
            return k, BAD_COLUMNS, p
        while buf[p] != LF:  # extra columns (weights) are ignored, as usecols=(0, 1) did
            p += 1
        p += 1
        k, lo_id, hi_id, lines, loops = _push_key(u, w, keys, k, lo_id, hi_id, lines, loops)
    stats[0], stats[1], stats[2], stats[3] = lo_id, hi_id, lines, loops
    return k, OK, p


@nb.njit(inline="always")
def _push_key(u, w, keys, k, lo_id, hi_id, lines, loops):
    """Count the edge line (u, w) and append its key ``min << 32 | max`` at ``keys[k]`` unless
    it is a self-loop or out of range; returns the updated (k, lo_id, hi_id, lines, loops)."""
    lo, hi = min(u, w), max(u, w)
    lo_id = min(lo_id, lo)
    hi_id = max(hi_id, hi)
    lines += 1
    if u == w:
        loops += 1
    elif lo >= 0 and hi < 0xFFFFFFFF:
        keys[k] = (np.uint64(lo) << np.uint64(32)) | np.uint64(hi)
        k += 1
    return k, lo_id, hi_id, lines, loops


@nb.njit(**_JIT)
def pair_keys(src, dst, keys, k, stats):
    """The keys of edges (src[i], dst[i]) into ``keys[k:]`` (as :func:`edge_keys` does for
    text); returns the new k."""
    lo_id, hi_id, lines, loops = stats[0], stats[1], stats[2], stats[3]
    for i in range(src.shape[0]):
        k, lo_id, hi_id, lines, loops = _push_key(np.int64(src[i]), np.int64(dst[i]), keys, k,
                                                  lo_id, hi_id, lines, loops)
    stats[0], stats[1], stats[2], stats[3] = lo_id, hi_id, lines, loops
    return k


@nb.njit(**_JIT)
def unique_sorted(keys):
    """Deduplicate a sorted array in place; returns the number of distinct values."""
    if keys.size == 0:
        return 0
    m = 1
    for i in range(1, keys.size):
        if keys[i] != keys[m - 1]:
            keys[m] = keys[i]
            m += 1
    return m


@nb.njit(**_JIT)
def count_rows(keys, indptr, first, stop):
    """indptr[u + 1] += degree of u for the rows first <= u < stop (one thread's share)."""
    mask = np.uint64(0xFFFFFFFF)
    for key in keys:
        lo = np.int64(key >> np.uint64(32))
        hi = np.int64(key & mask)
        if first <= lo < stop:
            indptr[lo + 1] += 1
        if first <= hi < stop:
            indptr[hi + 1] += 1


@nb.njit(**_JIT)
def scatter_rows(keys, indptr, indices, first, stop):
    """Scatter the symmetric entries of rows first <= u < stop; indptr[u] (the row's start
    on entry) serves as its cursor and ends as the row's end. Scattering in key order leaves
    each row sorted: row u first receives the x < u of keys (x, u) in increasing x, then the
    y > u of keys (u, y) in increasing y."""
    mask = np.uint64(0xFFFFFFFF)
    for key in keys:
        lo = np.int64(key >> np.uint64(32))
        hi = np.int64(key & mask)
        if first <= lo < stop:
            indices[indptr[lo]] = hi
            indptr[lo] += 1
        if first <= hi < stop:
            indices[indptr[hi]] = lo
            indptr[hi] += 1


@nb.njit(inline="always")
def _lower(c):
    return c + 32 if 65 <= c <= 90 else c


@nb.njit(**_JIT)
def _number(buf, p, sep, f32, p10):
    """(status, value, end) of the number token at ``p``; status SLOW hands it to Python."""
    q = p
    neg = False
    if buf[q] == 45 or buf[q] == 43:
        neg = buf[q] == 45
        q += 1
    c = _lower(buf[q])
    if c == 110 or c == 105:  # nan / inf / infinity
        word = q
        while 97 <= _lower(buf[q]) <= 122:
            q += 1
        ln = q - word
        v = np.nan
        ok = False
        if ln == 3 and c == 110 and _lower(buf[word + 1]) == 97 and _lower(buf[word + 2]) == 110:
            ok = True
        elif c == 105 and (ln == 3 or ln == 8) and _lower(buf[word + 1]) == 110 \
                and _lower(buf[word + 2]) == 102:
            ok = ln == 3 or (_lower(buf[word + 3]) == 105 and _lower(buf[word + 4]) == 110
                             and _lower(buf[word + 5]) == 105 and _lower(buf[word + 6]) == 116
                             and _lower(buf[word + 7]) == 121)
            v = np.inf
        if not ok or not _ends_token(buf[q], sep):
            return BAD_TOKEN, 0.0, q
        return OK, -v if neg else v, q
    w = 0  # the first <= 18 significant digits (fit int64); later ones only set truncated
    nd = 0
    e10 = 0
    truncated = False
    start = q
    while buf[q] == 48:  # leading zeros are not significant
        q += 1
    while True:
        d = np.int64(buf[q]) - 48
        if d < 0 or d > 9:
            break
        if nd < 18:
            w = w * 10 + d
            nd += 1
        else:
            e10 += 1
            truncated |= d != 0
        q += 1
    digits = q - start
    if buf[q] == 46:  # '.'
        q += 1
        frac = q
        if nd == 0:
            while buf[q] == 48:
                q += 1
            e10 -= q - frac
        while True:
            d = np.int64(buf[q]) - 48
            if d < 0 or d > 9:
                break
            if nd < 18:
                w = w * 10 + d
                nd += 1
                e10 -= 1
            else:
                truncated |= d != 0
            q += 1
        digits += q - frac
    if digits == 0:
        return BAD_TOKEN, 0.0, q
    if buf[q] == 101 or buf[q] == 69:  # exponent
        q += 1
        eneg = False
        if buf[q] == 45 or buf[q] == 43:
            eneg = buf[q] == 45
            q += 1
        es = q
        ev = 0
        while 48 <= buf[q] <= 57:
            if ev < 100000:
                ev = ev * 10 + (buf[q] - 48)
            q += 1
        if q == es:
            return BAD_TOKEN, 0.0, q
        e10 += -ev if eneg else ev
    if not _ends_token(buf[q], sep):
        return BAD_TOKEN, 0.0, q
    if w == 0:
        return OK, -0.0 if neg else 0.0, q
    if not truncated and w <= (1 << 53) and -22 <= e10 <= 22:  # Clinger: exact
        v = float(w) * p10[e10 + 100] if e10 >= 0 else float(w) / p10[-e10 + 100]
        return OK, -v if neg else v, q
    if not f32:
        return SLOW, 0.0, q
    mag = e10 + nd - 1  # the value lies in [10^mag, 10^(mag+1))
    if mag < -60:  # far below float32's smallest subnormal: rounds to zero
        return OK, -0.0 if neg else 0.0, q
    if mag > 39:  # far above float32's largest: infinity (refused later as non-finite)
        return OK, -np.inf if neg else np.inf, q
    v = float(w) * p10[e10 + 100]
    bits = np.int64(np.float64(v).view(np.int64)) & np.int64((1 << 29) - 1)
    if abs(bits - (1 << 28)) <= 8 or v < 1.1754943508222875e-38:  # near a midpoint/subnormal
        return SLOW, 0.0, q
    return OK, -v if neg else v, q


@nb.njit(**_JIT)
def table(buf, p, flat, k, col, ncols, sep, f32, p10):
    """Parse rows of ``ncols`` numbers from ``buf[p:]`` into ``flat[k:]``, starting with
    ``col`` values of the current line already stored; returns (status, p, k, col, end) with
    ``end`` the token end for SLOW."""
    n = buf.size
    while p < n:
        if col == 0:
            p = _skip_blank(buf, p, sep)
            c = buf[p]
            if c == LF or c == _CR or c == 35 or c == 37:
                while buf[p] != LF:
                    p += 1
                p += 1
                continue
        else:
            q = _skip_blank(buf, p, sep)
            c = buf[q]
            if c == _CR:
                q += 1
                c = buf[q]
            if c == LF or c == 35 or c == 37:
                if col != ncols:
                    return BAD_COLUMNS, q, k, col, q
                while buf[q] != LF:
                    q += 1
                p = q + 1
                col = 0
                continue
            if col == ncols:
                return BAD_COLUMNS, q, k, col, q
            if sep != 0:
                if c != sep:
                    return BAD_TOKEN, p, k, col, q
                q = _skip_blank(buf, q + 1, sep)
            elif q == p:
                return BAD_TOKEN, p, k, col, q
            p = q
        if k >= flat.size:
            return FULL, p, k, col, p
        status, v, end = _number(buf, p, sep, f32, p10)
        if status != OK:
            return status, p, k, col, end
        flat[k] = v
        k += 1
        col += 1
        p = end
    return OK, p, k, col, p


