"""Labels files of edge-list datasets (:mod:`scalegnn.data.csv`): class tables and SNAP
community files.

* **A class table**: a CSV (``id,label`` with a header, MUSAE ``*_target.csv``) or ``node label``
  lines (tab, ``;``, ``,`` or space separated, ``#``/``%`` comments). Line 1 is a header only
  when it differs in kind from line 2: a name above a number (``id`` above ``0``). A line 1 of
  numbers only, or with a number where line 2 has one too (``0 a`` above ``1 b``: word classes),
  is data. A line 1 of words above words is a header in a ``.csv`` file or when it holds a
  known column name (``id``, ``label``... or the one named by a flag), else data. The node id
  column is ``--id-column`` when given, else ``id``/``node``/``node_id``/``nodeid`` (a
  headerless two-column file: column 0; else row order); the class column is
  ``--label-column`` when given, else ``page_type``/``label``/``target``/``class``/``y``, else
  the only column that is not the id column (else the loader stops, listing the columns). Word
  classes map to ids in sorted order of the words.
* **A community file** (SNAP ``*.cmty.txt``, ``*.cmty``): one community per line, the ids of its
  member nodes separated by tabs or spaces. Recognized by the ``.cmty`` suffix, or by rows of
  different lengths in a headerless file of integers. It becomes a multi-label task: node x
  community 0/1 matrix, community c = line c (comments and blank lines skipped).
"""

from __future__ import annotations

import csv as _csv
from pathlib import Path

import numpy as np

from scalegnn.data import _common as C
from scalegnn.data import _stream as S
from scalegnn.data._byte_stream import first_line
from scalegnn.data.options import flag, listing
from scalegnn.errors import DataError
from scalegnn.memory import require_memory

ID_COLUMNS = ("id", "node", "node_id", "nodeid")
LABEL_COLUMNS = ("page_type", "label", "target", "class", "y")
COMMENTS = ("#", "%")


def is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def is_community_name(path) -> bool:
    """A SNAP community file by its name: ``.cmty`` or ``.cmty.txt``."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    return ".cmty" in suffixes[-2:]


class RaggedRows(DataError):
    """A headerless table whose rows differ in length: maybe a community file."""


def _label_rows(path) -> list[list[str]]:
    """Rows of a labels file: a .csv through the csv module (quoted fields), other files split
    on the first line's delimiter (tab, ``;``, ``,``) or on whitespace, comment lines dropped."""
    with open(path, encoding="utf-8", newline="") as f:
        if path.suffix.lower() == ".csv":
            return list(_csv.reader(f))
        lines = [ln.strip() for ln in f]
    lines = [ln for ln in lines if ln and not ln.startswith(COMMENTS)]
    delim = next((d for d in ("\t", ";", ",") if lines and d in lines[0]), None)
    return [[t.strip() for t in (ln.split(delim) if delim else ln.split())] for ln in lines]


def is_header(first: list[str], second: list[str] | None, path, named=()) -> bool:
    """Whether line 1 of a labels table is a header (see the module docstring); ``named``:
    the column names given by flags."""
    kinds = [is_number(t) for t in first]
    if not first:
        return True  # an empty line 1: refused as a missing header
    if all(kinds):
        return False
    if second is None:
        return True
    if any(not a and is_number(b) for a, b in zip(kinds, second)):
        return True  # a name above a number
    if any(kinds):
        return False  # numbers where line 2 has them too: '0 a' above '1 b' is data
    names = {*ID_COLUMNS, *LABEL_COLUMNS, *(str(n).strip().lower() for n in named if n)}
    return Path(path).suffix.lower() == ".csv" or any(t.strip().lower() in names
                                                      for t in first)


def _pick_column(head, wanted, key, path, fallback) -> int | None:
    """Index of the column the user named (case-insensitive), else ``fallback``."""
    if wanted is None:
        return fallback
    name = str(wanted).strip().lower()
    if name in head:
        return head.index(name)
    raise DataError(f"{path}: no column {str(wanted)!r:.60} for {flag(key)}; columns: "
                    f"{listing(head)}")


def _columns(first: list[str], headerless: bool, more_rows: bool, id_column, label_column,
             path):
    """(head, id column or None, label column) from line 1; see the module docstring."""
    if headerless:
        head = [str(i) for i in range(len(first))]
        guess_id = 0 if len(head) == 2 else None
        guess_label = len(head) - 1 if len(head) <= 2 else None
    else:
        if not more_rows:
            raise DataError(f"{path}: no label rows")
        head = [h.strip().lower() for h in first]
        if not head:
            raise DataError(f"{path}: line 1 must be a header (e.g. id,label), found an empty "
                            "line")
        guess_id = next((head.index(c) for c in ID_COLUMNS if c in head), None)
        guess_label = next((head.index(c) for c in LABEL_COLUMNS if c in head), None)
    id_col = _pick_column(head, id_column, "id_column", path, guess_id)
    lab_col = _pick_column(head, label_column, "label_column", path, guess_label)
    if lab_col is None:
        rest = [i for i in range(len(head)) if i != id_col]
        if len(rest) != 1:
            raise DataError(f"{path}: which column holds the classes? columns: "
                            f"{listing(head)}; name one with {flag('label_column')}")
        lab_col = rest[0]
    if lab_col == id_col:
        raise DataError(f"{path}: column {head[lab_col]!r:.60} cannot be both the node ids and "
                        f"the labels; name the other with {flag('id_column')} or "
                        f"{flag('label_column')}")
    return head, id_col, lab_col


def _numeric_labels(path, id_column, label_column):
    """The result of :func:`read_labels_csv` for an all-numeric file whose ids and classes are
    whole non-negative numbers, parsed by the streaming table reader (a million rows in well
    under a second, where the csv module takes seconds); None for anything else, which the
    general path then reads and, if need be, refuses with its precise message."""
    first = first_line(path, "labels CSV")
    if not first or '"' in first:
        return None
    if path.suffix.lower() == ".csv":
        delim = ","
    else:
        delim = next((d for d in ("\t", ";", ",") if d in first), None)
    toks = [t.strip() for t in (first.split(delim) if delim else first.split())]
    headerless = all(is_number(t) for t in toks)  # else a header: the rest is all numbers
    try:
        head, id_col, lab_col = _columns(toks, headerless, True, id_column, label_column, path)
        table = S.read_table(path, "labels CSV", np.float64, ord(delim) if delim else 0,
                             header=not headerless)
    except DataError:
        return None  # the general path decides (ragged rows, words, its precise message)
    if table.shape[0] == 0 or table.shape[1] != len(head):
        return None
    cols = [table[:, lab_col]] + ([table[:, id_col]] if id_col is not None else [])
    for c in cols:
        if not (np.isfinite(c).all() and (np.mod(c, 1) == 0).all() and c.min() >= 0
                and c.max() < C.MAX_ID):
            return None
    ids = None if id_col is None else table[:, id_col].astype(np.int64)
    return ids, table[:, lab_col].astype(np.int64), head[lab_col]


def read_labels_csv(path, id_column=None, label_column=None):
    """(node ids or None, labels, label column name): labels are class ids (int64) for an
    all-numeric file, else the raw label strings. :class:`RaggedRows` (a DataError) for a
    headerless file whose rows differ in length. See the module docstring for the header and
    the columns."""
    path = C.require_file(path, "labels CSV")
    fast = _numeric_labels(path, id_column, label_column)
    if fast is not None:
        return fast
    try:
        rows = _label_rows(path)
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except _csv.Error as e:
        raise DataError(f"{path}: bad CSV ({C._short(e)})") from None
    if not rows:
        raise DataError(f"{path}: no label rows")
    headerless = not is_header(rows[0], rows[1] if len(rows) > 1 else None, path,
                               (id_column, label_column))
    width = len(rows[0])
    body = rows[0 if headerless else 1:]
    first_no = 1 if headerless else 2
    for i, r in enumerate(body):
        if len(r) != width:
            cls = RaggedRows if headerless else DataError
            raise cls(f"{path}: line {i + first_no} has {len(r)} fields, "
                      f"{'line 1' if headerless else 'header'} has {width}")
    head, id_col, lab_col = _columns(rows[0], headerless, len(rows) > 1, id_column,
                                     label_column, path)
    values = [r[lab_col].strip() for r in body]
    ids = None
    if id_col is not None:
        ids = _whole_numbers([r[id_col] for r in body], path, f"column {head[id_col]!r}",
                             "node ids", first_no)
    return ids, values, head[lab_col]


def _whole_numbers(tokens, path, where: str, what: str, first_no: int = 2) -> np.ndarray:
    """int64 ids from text tokens ('3' or '3.0'); DataError naming the first other token."""
    out = np.empty(len(tokens), dtype=np.int64)
    for i, tok in enumerate(tokens):
        v = C.parse_int(tok)
        if v is None or not -C.MAX_ID < v < C.MAX_ID:
            raise DataError(f"{path}: {where:.80} must hold integer {what}, line {i + first_no} "
                            f"has {tok.strip()!r:.60}")
        out[i] = v
    return out


def label_ids(values, path) -> tuple[np.ndarray, list | None]:
    """Class ids from a label column: integers ('3', '3.0') as they are, other numbers
    ('2.7', 'nan') refused, anything else as class names in sorted order; an int64 array
    (from the numeric fast path) is already class ids."""
    if isinstance(values, np.ndarray):
        return values, None
    if values and all(is_number(v) for v in values):
        raw = _whole_numbers(values, path, "the label column", "class ids")
        if raw.min() < 0:
            raise DataError(f"{path}: label id {raw.min()} is negative")
        return raw, None
    return C.strings_to_classes(values)


def read_communities(path) -> tuple[np.ndarray, np.ndarray]:
    """(member node ids, members per community) of a community file, one community per line
    (see the module docstring); DataError naming the line of a bad id."""
    path = C.require_file(path, "community file")
    ids, sizes = [], []
    try:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                text = line.strip()
                if not text or text.startswith(COMMENTS):
                    continue
                toks = text.replace(",", " ").replace(";", " ").split()
                try:
                    members = np.array(toks, dtype=np.int64)
                except (ValueError, OverflowError):  # '3.0' (kept), a word, a huge number
                    values = [C.parse_int(t) for t in toks]
                    bad = next((t for t, v in zip(toks, values)
                                if v is None or not -C.MAX_ID < v < C.MAX_ID), None)
                    if bad is not None:
                        raise DataError(f"{path}: community members must be integer node "
                                        f"ids, line {number} has {bad!r:.40}") from None
                    members = np.array(values, dtype=np.int64)
                if members.min() < 0:
                    raise DataError(f"{path}: negative node id {members.min()} on line "
                                    f"{number}")
                ids.append(members)
                sizes.append(members.size)
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text (byte {e.start})") from None
    if not ids:
        raise DataError(f"{path}: no communities (expected one line of node ids per "
                        f"community)")
    return np.concatenate(ids), np.array(sizes, dtype=np.int64)


def community_matrix(members: np.ndarray, sizes: np.ndarray, n: int, path) -> np.ndarray:
    """The (n, communities) 0/1 float32 membership matrix."""
    k = sizes.size
    require_memory(f"{path}: {k:,} communities x {n:,} nodes as a 0/1 label matrix",
                   2 * 4.0 * n * k)  # the matrix and the validation's copy
    y = np.zeros((n, k), dtype=np.float32)
    y[members, np.repeat(np.arange(k), sizes)] = 1.0
    return y
