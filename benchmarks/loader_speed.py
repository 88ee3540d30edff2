"""Speed and peak memory of every dataset loader on a synthetic Kronecker graph.

    python benchmarks/loader_speed.py [--scale 20] [--edge-factor 16] [--features 50]
                                      [--formats csv-gz,csv,ogb,npz,hetero,graphsaint,mat]
                                      [--dir DIR]

Writes the graph ``kronecker:SCALE:EDGE_FACTOR`` (each undirected edge once, u < v, in CSR
order, as published edge lists are), random float32 features (6 decimals) and 8-class labels
in each format under DIR (kept, and reused when present: generating gzip'd text is slow; the
csv folders hold g_edges.csv[.gz], g_target.csv and g_feat.npy), then loads
each with :func:`scalegnn.data.load_dataset` in a fresh subprocess and prints one JSON line
per format:

* ``file_mb``: bytes of the input files (the .gz files as stored) / 1e6; ``seconds``: wall
  time of the load into a validated Dataset; ``mb_per_s`` = file_mb / seconds.
* ``peak_mb``: peak RSS of the child above its baseline, where the baseline is the RSS after
  the imports and a warm-up load of a tiny dataset of the same format (JIT caches, imports);
  the peak is VmHWM after resetting it through /proc/self/clear_refs.
* ``data_mb``: the loaded Dataset's CSR(s) (graph, and a train_graph held after loading: none
  for GraphSAINT folders, whose adj_train.npz is read on first use) + features;
  ``ratio`` = peak_mb / data_mb (target <= 2).
* ``cpu_seconds``: user + system time of the load, all threads (wall time on a shared machine
  depends on its load; CPU time much less).
* ``edge_*`` (csv-gz, csv, ogb): the edge file alone, parsed into the CSR after the load:
  ``edge_file_mb`` as stored (gzip'd for csv-gz and ogb), ``edge_seconds``,
  ``edge_cpu_seconds``, ``edge_mb_per_s``.

Every line carries the load average (``os.getloadavg``) after its load, and the first and
last lines the load average before and after the run, since this machine is shared.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numba as nb
import numpy as np

from scalegnn.memory import peak_rss_bytes, reset_peak_rss, rss_bytes

FORMATS = ("csv-gz", "csv", "ogb", "npz", "hetero", "graphsaint", "mat")


# ----------------------------------------------------------------------------- measuring
def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)  # all threads of this process
    return r.ru_utime + r.ru_stime


def _edge_file(path: Path) -> Path | None:
    """The gzip'd/plain edge list of a CSV or OGB dataset, else None."""
    from scalegnn.data.csv import find_csv_files
    if (path / "raw" / "edge.csv.gz").is_file():
        return path / "raw" / "edge.csv.gz"
    if path.is_dir() and not (path / "adj_full.npz").exists():
        files = find_csv_files(path)
        return files["edges"] if files else None
    return None


def _child(path: str, warm: str) -> None:
    """Load ``warm`` (imports, JIT), then measure the load of ``path``; print one JSON line.
    For an edge-list dataset, the edge file alone (parse + CSR) is then timed too."""
    from scalegnn.data import _stream as S
    from scalegnn.data import load_dataset
    from scalegnn.data.csv import read_edge_csv
    load_dataset(warm)
    gc.collect()
    base = rss_bytes()
    reset_peak_rss()
    t, c = time.perf_counter(), _cpu()
    ds = load_dataset(path)
    seconds, cpu = time.perf_counter() - t, _cpu() - c
    peak = peak_rss_bytes() - base
    data = ds.graph.nbytes + int(ds.features.nbytes)
    stored = getattr(ds, "_train_graph", None)  # the property would build one
    if stored is not None and stored is not ds.graph:
        data += stored.nbytes
    out = {"seconds": seconds, "cpu_seconds": cpu, "peak_bytes": peak, "data_bytes": data,
           "baseline_bytes": base, "nodes": ds.num_nodes, "edges": ds.graph.num_edges}
    n = ds.num_nodes
    del ds
    gc.collect()
    edges = _edge_file(Path(path))
    if edges is not None:
        t, c = time.perf_counter(), _cpu()
        S.edge_list_graph(*(read_edge_csv(edges) if "raw" not in edges.parts
                            else S.read_edges(edges, extra_ok=False)), n, edges)
        out.update(edge_file=str(edges), edge_seconds=time.perf_counter() - t,
                   edge_cpu_seconds=_cpu() - c)
    print(json.dumps(out))


def measure(fmt: str, path: Path, warm: Path) -> dict:
    """Run the child on ``path`` and return its JSON record with the derived fields."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    out = subprocess.run([sys.executable, __file__, "--child", str(path), str(warm)],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{fmt}: child failed: {out.stderr.strip()[-2000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    mb = input_bytes(path) / 1e6
    rec = {"format": fmt, "file_mb": round(mb, 1), "seconds": round(r["seconds"], 3),
           "cpu_seconds": round(r["cpu_seconds"], 3), "mb_per_s": round(mb / r["seconds"], 1),
           "peak_mb": round(r["peak_bytes"] / 1e6, 1), "data_mb": round(r["data_bytes"] / 1e6, 1),
           "ratio": round(r["peak_bytes"] / r["data_bytes"], 3),
           "baseline_mb": round(r["baseline_bytes"] / 1e6, 1), "nodes": r["nodes"],
           "edges": r["edges"]}
    if "edge_file" in r:
        emb = Path(r["edge_file"]).stat().st_size / 1e6
        rec.update(edge_file_mb=round(emb, 1), edge_seconds=round(r["edge_seconds"], 3),
                   edge_cpu_seconds=round(r["edge_cpu_seconds"], 3),
                   edge_mb_per_s=round(emb / r["edge_seconds"], 1))
    return rec


def input_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# ----------------------------------------------------------------------------- writing text fast
@nb.njit  # no cache: this file also runs as a module loaded by path (tests)
def _put_int(buf, p, v):
    if v < 0:
        buf[p] = 45
        p += 1
        v = -v
    digits = 1
    t = v
    while t >= 10:
        t //= 10
        digits += 1
    for i in range(digits - 1, -1, -1):
        buf[p + i] = 48 + v % 10
        v //= 10
    return p + digits


@nb.njit  # no cache: this file also runs as a module loaded by path (tests)
def _format_pairs(a, b, buf):
    """'a,b\\n' lines into buf; returns the byte count."""
    p = 0
    for i in range(a.shape[0]):
        p = _put_int(buf, p, a[i])
        buf[p] = 44
        p = _put_int(buf, p + 1, b[i])
        buf[p] = 10
        p += 1
    return p


@nb.njit  # no cache: this file also runs as a module loaded by path (tests)
def _format_rows(x, buf):
    """Rows of x as '%.6f' values joined by ',' into buf; returns the byte count."""
    p = 0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = np.float64(x[i, j])
            if v < 0:
                buf[p] = 45
                p += 1
                v = -v
            m = np.int64(np.floor(v * 1e6 + 0.5))
            p = _put_int(buf, p, m // 1000000)
            buf[p] = 46
            frac = m % 1000000
            for k in range(6, 0, -1):
                buf[p + k] = 48 + frac % 10
                frac //= 10
            p += 7
            buf[p] = 44 if j + 1 < x.shape[1] else 10
            p += 1
    return p


def write_text(path: Path, chunks, gz: bool) -> None:
    """Write byte chunks (gzip level 6 when ``gz``), via a temporary then renamed."""
    tmp = path.with_name(path.name + ".part")
    with (gzip.open(tmp, "wb", compresslevel=6) if gz else open(tmp, "wb")) as f:
        for c in chunks:
            f.write(c)
    os.replace(tmp, path)


def edge_chunks(lo, hi, header: bytes = b"", step: int = 1 << 20):
    if header:
        yield header
    buf = np.empty(step * 24, np.uint8)
    for s in range(0, lo.shape[0], step):
        k = _format_pairs(lo[s:s + step], hi[s:s + step], buf)
        yield buf[:k].tobytes()


def row_chunks(x, step: int = 1 << 14):
    buf = np.empty(step * x.shape[1] * 24, np.uint8)
    for s in range(0, x.shape[0], step):
        k = _format_rows(x[s:s + step], buf)
        yield buf[:k].tobytes()


def int_lines(v) -> bytes:
    return ("\n".join(map(str, np.asarray(v).tolist())) + "\n").encode()


# ----------------------------------------------------------------------------- the files
def make_data(scale: int, edge_factor: int, features: int, seed: int = 0):
    from scalegnn.data._common import seeded_split
    from scalegnn.data.synthetic import kronecker_graph
    g = kronecker_graph(scale, edge_factor, seed=seed)
    n = g.num_nodes
    rng = np.random.default_rng(seed)
    x = np.round(rng.standard_normal((n, features), dtype=np.float32), 6)
    y = rng.integers(0, 8, n)
    y[:8] = np.arange(8)
    return g, x, y, seeded_split(n, seed)


def upper_edges(g):
    """(lo, hi) of each undirected edge once, u < v, in CSR order."""
    src = np.repeat(np.arange(g.num_nodes, dtype=np.int64), np.diff(g.indptr))
    keep = src < g.indices
    return src[keep], g.indices[keep].astype(np.int64)


def write_format(fmt: str, root: Path, g, x, y, split) -> Path:
    """Write one format under ``root``; returns the path to load."""
    import scipy.io as sio
    import scipy.sparse as sp

    from scalegnn.data import Dataset
    from scalegnn.data.graphsaint import save_graphsaint
    n = g.num_nodes
    tr, va, te = split
    if fmt in ("csv-gz", "csv"):
        d = root / fmt
        d.mkdir(parents=True, exist_ok=True)
        lo, hi = upper_edges(g)
        gz = fmt == "csv-gz"
        write_text(d / ("g_edges.csv.gz" if gz else "g_edges.csv"),
                   edge_chunks(lo, hi, b"id_1,id_2\n"), gz)
        labels = "id,label\n" + "".join(f"{i},{v}\n" for i, v in enumerate(y.tolist()))
        (d / "g_target.csv").write_text(labels)
        np.save(d / "g_feat.npy", x)
        return d
    if fmt == "ogb":
        d = root / "ogb"
        for sub in ("raw", "split/s"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        lo, hi = upper_edges(g)
        write_text(d / "raw" / "edge.csv.gz", edge_chunks(lo, hi), True)
        write_text(d / "raw" / "node-feat.csv.gz", row_chunks(x), True)
        write_text(d / "raw" / "node-label.csv.gz", [int_lines(y)], True)
        write_text(d / "raw" / "num-node-list.csv.gz", [f"{n}\n".encode()], True)
        for name, idx in (("train", tr), ("valid", va), ("test", te)):
            write_text(d / "split" / "s" / f"{name}.csv.gz", [int_lines(idx)], True)
        return d
    if fmt == "npz":
        p = root / "g.npz"
        np.savez(p, adj_data=np.ones(g.num_edges, np.float32), adj_indices=g.indices,
                 adj_indptr=g.indptr, adj_shape=np.array([n, n]), attr_matrix=x, labels=y)
        return p
    if fmt == "hetero":
        p = root / "h.npz"
        lo, hi = upper_edges(g)
        masks = [np.isin(np.arange(n), s)[None, :] for s in split]
        np.savez(p, node_features=x, node_labels=y, edges=np.stack([lo, hi], 1),
                 train_masks=masks[0], val_masks=masks[1], test_masks=masks[2])
        return p
    if fmt == "graphsaint":
        ds = Dataset(g, x, y, tr, va, te, name="k", source="k", metric="accuracy")
        save_graphsaint(ds, root / "gs", overwrite=True)
        return root / "gs"
    if fmt == "mat":
        p = root / "g.mat"
        a = sp.csc_matrix((np.ones(g.num_edges), g.indices, g.indptr), shape=(n, n))
        sio.savemat(p, {"network": a, "group": y[:, None], "features": x})
        return p
    raise ValueError(f"unknown format {fmt!r}")


def prepare(fmt: str, root: Path, scale: int, edge_factor: int, features: int, cache: dict):
    """The path of ``fmt`` under ``root``, written unless a previous run left it there."""
    mark = root / f".{fmt}.done"
    names = {"csv-gz": "csv-gz", "csv": "csv", "ogb": "ogb", "npz": "g.npz", "hetero": "h.npz",
             "graphsaint": "gs", "mat": "g.mat"}
    if mark.exists():
        return root / names[fmt]
    if "data" not in cache:
        cache["data"] = make_data(scale, edge_factor, features)
    path = write_format(fmt, root, *cache["data"])
    mark.write_text("")
    return path


def run(scale: int, edge_factor: int, features: int, formats, folder: Path):
    """Yield one record per format: written (or reused) at this size under ``folder``, with a
    tiny warm-up copy, and measured in a fresh process."""
    big = Path(folder) / f"k{scale}_{edge_factor}_{features}"
    tiny = Path(folder) / "warm"
    big.mkdir(parents=True, exist_ok=True)
    tiny.mkdir(parents=True, exist_ok=True)
    c_big, c_tiny = {}, {}
    for fmt in formats:
        path = prepare(fmt, big, scale, edge_factor, features, c_big)
        warm = prepare(fmt, tiny, 10, 4, 4, c_tiny)
        r = measure(fmt, path, warm)
        r["loadavg"] = [round(v, 2) for v in os.getloadavg()]
        yield r


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--edge-factor", type=int, default=16)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--dir", default="/tmp/scalegnn_loader_speed")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        _child(*a.child)
        return
    formats = [f.strip() for f in a.formats.split(",") if f.strip()]
    for f in formats:
        if f not in FORMATS:
            ap.error(f"unknown format {f!r}; choose from {', '.join(FORMATS)}")
    print(json.dumps({"loadavg_before": os.getloadavg()}), flush=True)
    for r in run(a.scale, a.edge_factor, a.features, formats, Path(a.dir)):
        print(json.dumps(r), flush=True)
    print(json.dumps({"loadavg_after": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()
