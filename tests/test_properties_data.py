"""Property tests of data input: arbitrary input either works or is refused with a one-line
ScaleGNNError.

Every dataset format that :func:`scalegnn.data.load_dataset` detects (files damaged or replaced
by random content, (c) of the issue) and generator spec strings ((d)). Any exception other than
a :class:`ScaleGNNError` fails the property, and so does a message with a newline in it; a
dataset that loads must validate. Generators run under a small memory budget so a
large-but-legal random size is refused quickly instead of being built. Configs:
``test_properties_config.py``; the shared settings: ``property_helpers.py``.
"""

from __future__ import annotations

import gzip
import json
import string
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conftest import make_tiny_dataset
from property_helpers import FEW, FUZZ, json_like, outcome, tmpdir
from scalegnn.data import Dataset, load_dataset
from scalegnn.data.graphsaint import FILES, save_graphsaint
from scalegnn.errors import ScaleGNNError


def load_checked(path, **kw):
    ds = outcome(load_dataset, str(path), **kw)
    if ds is not None:
        assert isinstance(ds, Dataset)
        ds.validate()
    return ds


# ----------------------------------------------------------------------------- (c) loaders
small_arrays = hnp.arrays(
    dtype=st.one_of(hnp.integer_dtypes(endianness="="), hnp.floating_dtypes(endianness="="),
                    hnp.boolean_dtypes(), hnp.unicode_string_dtypes(max_len=3)),
    shape=hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=6))
ODD_VALUES = [-1, 0.5, 2.7, np.nan, np.inf, -np.inf, 1e30, 10**9, 2**40, 0]


def mutate_array(data, arr: np.ndarray) -> np.ndarray:
    """A plausible damage to a valid array: another dtype, one odd value, a cut, a reshape."""
    arr = np.array(arr)
    how = data.draw(st.sampled_from(["dtype", "value", "cut", "shape", "random"]))
    if how == "random" or arr.dtype.kind not in "iufb":
        return data.draw(small_arrays)
    if how == "dtype":
        return arr.astype(data.draw(st.sampled_from(
            [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int64, np.bool_, "U2"])))
    if how == "cut":
        return arr.ravel()[:data.draw(st.integers(0, max(arr.size - 1, 0)))]
    if how == "shape":
        return arr.reshape(-1, 1) if arr.ndim == 1 else arr.ravel()
    if arr.size:
        value = data.draw(st.sampled_from(ODD_VALUES))
        wide = np.int64 if isinstance(value, int) and arr.dtype.kind in "iu" else np.float64
        flat = arr.ravel().astype(wide)
        flat[data.draw(st.integers(0, arr.size - 1))] = value
        arr = flat.reshape(arr.shape)
    return arr


json_ids = st.one_of(st.integers(-3, 60), st.floats(-3, 60), st.sampled_from([1.5, 2.0, True]))


@pytest.fixture(scope="module")
def tiny():
    return make_tiny_dataset(n=30, num_features=4, classes=3)


def replace_json(p: Path, data, obj) -> None:
    """Overwrite a JSON file with a random object or a mutated copy of its contents."""
    mode = data.draw(st.sampled_from(["random", "mutate", "bytes"]))
    if mode == "random":
        p.write_text(json.dumps(data.draw(json_like)))
    elif mode == "bytes":
        p.write_bytes(data.draw(st.binary(max_size=64)))
    else:
        if isinstance(obj, dict) and obj:
            key = data.draw(st.sampled_from(sorted(obj)))
            obj[key] = data.draw(st.one_of(json_ids, st.lists(json_ids, max_size=5), json_like))
        p.write_text(json.dumps(obj))


@FUZZ
@given(st.data())
def test_graphsaint_folder_fuzzed(tiny, data):
    with tmpdir() as d:
        save_graphsaint(tiny, d / "gs")
        name = data.draw(st.sampled_from(FILES + ("scalegnn.json",)))
        p = d / "gs" / name
        if name.endswith(".json"):
            replace_json(p, data, json.loads(p.read_text()))
        elif name.endswith(".npz"):
            keys = data.draw(st.sets(st.sampled_from(["indptr", "indices", "shape", "format",
                                                      "data", "junk"]), max_size=5))
            arrays = {k: data.draw(small_arrays) for k in keys}
            if data.draw(st.booleans()):
                good = dict(np.load(p))
                arrays = {**good, **{k: mutate_array(data, v) for k, v in good.items()
                                     if k in keys}}
            with open(p, "wb") as f:
                np.savez(f, **arrays)
        elif data.draw(st.booleans()):
            np.save(p, mutate_array(data, np.load(p)), allow_pickle=False)
        else:
            p.write_bytes(data.draw(st.binary(max_size=80)))
        load_checked(d / "gs", mmap=data.draw(st.booleans()))


def gz_lines(rows) -> bytes:
    return gzip.compress("".join(",".join(map(str, r)) + "\n" for r in rows).encode())


def write_ogb(ds, root: Path) -> None:
    raw = root / "raw"
    raw.mkdir(parents=True)
    src, dst = ds.graph.edge_index()
    (raw / "edge.csv.gz").write_bytes(gz_lines(zip(src[src < dst], dst[src < dst])))
    (raw / "node-label.csv.gz").write_bytes(gz_lines([[int(v)] for v in ds.labels]))
    (raw / "node-feat.csv.gz").write_bytes(gz_lines(np.asarray(ds.features).tolist()))
    (raw / "num-node-list.csv.gz").write_bytes(gz_lines([[ds.num_nodes]]))
    sp_dir = root / "split" / "s"
    sp_dir.mkdir(parents=True)
    for name, idx in (("train", ds.train_idx), ("valid", ds.val_idx), ("test", ds.test_idx)):
        (sp_dir / f"{name}.csv.gz").write_bytes(gz_lines([[int(i)] for i in idx]))


csv_token = st.one_of(st.integers(-2, 40), st.floats(-2, 40), st.sampled_from(
    ["nan", "inf", "", "x", "1e30", "99999999999999999999", "3.0", " 7"]))


@FUZZ
@given(st.data())
def test_ogb_folder_fuzzed(tiny, data):
    with tmpdir() as d:
        write_ogb(tiny, d / "o")
        name = data.draw(st.sampled_from(["raw/edge.csv.gz", "raw/node-label.csv.gz",
                                          "raw/node-feat.csv.gz", "raw/num-node-list.csv.gz",
                                          "split/s/train.csv.gz", "split/s/test.csv.gz"]))
        p = d / "o" / name
        if data.draw(st.booleans()):
            rows = data.draw(st.lists(st.lists(csv_token, min_size=1, max_size=3), max_size=40))
            p.write_bytes(gz_lines(rows))
        else:
            good = gzip.decompress(p.read_bytes())
            cut = data.draw(st.integers(0, len(good)))
            p.write_bytes(data.draw(st.sampled_from([gzip.compress(good)[:cut + 10],
                                                     good[:cut],
                                                     data.draw(st.binary(max_size=40))])))
        load_checked(d / "o")


NPZ_KEYS = ["adj_data", "adj_indices", "adj_indptr", "adj_shape", "attr_matrix", "attr_data",
            "attr_indices", "attr_indptr", "attr_shape", "labels", "labels_data",
            "labels_indices", "labels_indptr", "labels_shape", "class_names", "node_features",
            "node_labels", "edges", "train_masks", "val_masks", "test_masks"]


def valid_npz(ds, layout: str) -> dict:
    if layout == "gnn-benchmark":
        a = ds.graph.to_scipy()
        return dict(adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr,
                    adj_shape=np.array(a.shape), attr_matrix=ds.features, labels=ds.labels)
    src, dst = ds.graph.edge_index()
    masks = np.zeros((3, ds.num_nodes), bool)
    for i, idx in enumerate((ds.train_idx, ds.val_idx, ds.test_idx)):
        masks[i, idx] = True
    return dict(node_features=ds.features, node_labels=ds.labels, edges=np.stack([src, dst], 1),
                train_masks=masks[0], val_masks=masks[1], test_masks=masks[2])


@FUZZ
@given(st.data())
def test_npz_fuzzed(tiny, data):
    layout = data.draw(st.sampled_from(["gnn-benchmark", "heterophilous", "random"]))
    arrays = {} if layout == "random" else valid_npz(tiny, layout)
    for k in data.draw(st.sets(st.sampled_from(NPZ_KEYS), min_size=1, max_size=4)):
        arrays[k] = mutate_array(data, arrays[k]) if k in arrays else data.draw(small_arrays)
    with tmpdir() as d:
        with open(d / "g.npz", "wb") as f:
            np.savez(f, **arrays)
        if data.draw(st.booleans()):                     # damage the archive bytes
            raw = bytearray((d / "g.npz").read_bytes())
            at = data.draw(st.integers(0, len(raw) - 1))
            raw[at:at + 4] = data.draw(st.binary(min_size=1, max_size=4))
            (d / "g.npz").write_bytes(bytes(raw))
        load_checked(d / "g.npz", split=data.draw(st.integers(-1, 3)))


@FEW
@given(st.data())
def test_mat_fuzzed(data):
    import scipy.io as sio
    n = data.draw(st.integers(1, 12))
    a = np.triu(data.draw(hnp.arrays(np.int8, (n, n), elements=st.integers(0, 1))), 1)
    content = {"network": a + a.T,
               "group": data.draw(hnp.arrays(np.int8, (n, 3), elements=st.integers(0, 1)))}
    for key in data.draw(st.sets(st.sampled_from(["network", "group", "features", "attr"]),
                                 max_size=3)):
        arr = mutate_array(data, content[key]) if key in content and data.draw(st.booleans()) \
            else data.draw(st.one_of(small_arrays.filter(lambda x: x.dtype.kind != "U"),
                                     hnp.arrays(np.float64, (n, n), elements=st.sampled_from(
                                         [0.0, 1.0, 2.0, np.nan]))))
        sparse_ok = arr.ndim == 2 and arr.dtype in (np.float32, np.float64, np.bool_)
        content[key] = sp.csc_matrix(arr) if sparse_ok and data.draw(st.booleans()) else arr
    if data.draw(st.booleans()):
        content.pop(data.draw(st.sampled_from(sorted(content))))
    with tmpdir() as d:
        try:
            sio.savemat(d / "m.mat", content)
        except (ValueError, TypeError):
            assume(False)                                # scipy cannot store it: not our input
        load_checked(d / "m.mat")


@FUZZ
@given(st.data())
def test_csv_fuzzed(data):
    n = data.draw(st.integers(1, 16))
    node, odd = st.integers(0, n - 1), st.one_of(st.just(None), csv_token)
    pairs = data.draw(st.lists(st.tuples(node, node, odd), max_size=30))
    edges = [f"{u},{v if o is None else o}" for u, v, o in pairs]
    edges += data.draw(st.lists(st.lists(csv_token, max_size=3).map(
        lambda r: ",".join(map(str, r))), max_size=2))
    header = data.draw(st.sampled_from(["id_1,id_2", "", "0,1", "1.5,2", "source\ttarget"]))
    rows = [(i, data.draw(st.one_of(st.integers(0, 3), st.sampled_from(["a", "b"]), odd)))
            for i in range(n)]
    head = data.draw(st.sampled_from(["id,label", "node,page_type", "label", "", "id"]))
    body = [f"{i},{v}" if "," in head else f"{v}" for i, v in rows]
    with tmpdir() as d:
        (d / "g_edges.csv").write_text("\n".join([header] + edges) + "\n")
        (d / "g_target.csv").write_text("\n".join([head] + body) + "\n")
        feats = data.draw(st.sampled_from(["none", "json", "npy"]))
        if feats == "json":
            obj = data.draw(st.one_of(json_like, st.dictionaries(
                st.integers(-1, n).map(str), st.lists(json_ids, max_size=4), max_size=n)))
            (d / "g_features.json").write_text(json.dumps(obj))
        elif feats == "npy":
            x = np.ones((n, 3), np.float32)
            np.save(d / "g_features.npy", mutate_array(data, x) if data.draw(st.booleans())
                    else x, allow_pickle=False)
        load_checked(d)  # the folder: its edges, target and features files


# ----------------------------------------------------------------------------- (d) spec strings
@contextmanager
def small_memory(nbytes: int = 16 << 20):
    with mock.patch("scalegnn.memory.available_memory", return_value=nbytes):
        yield


spec_value = st.one_of(st.integers(-5, 10**7).map(str), st.floats().map(str),
                       st.text(alphabet=string.printable, max_size=6),
                       st.sampled_from(["1e3", "nan", "inf", "0", "true", "²", "-0"]))
planted_spec = st.lists(st.tuples(st.sampled_from(["nodes", "classes", "features", "degree",
                                                   "p_in", "noise", "multilabel", "labels",
                                                   "seed", "colour"]), spec_value),
                        max_size=4).map(lambda kv: "planted:" + ",".join(f"{k}={v}" for k, v in kv))
kron_spec = st.tuples(st.one_of(st.integers(-1, 45).map(str), spec_value),
                      st.one_of(st.integers(-1, 20).map(str), spec_value),
                      st.lists(st.tuples(st.sampled_from(["a", "b", "c", "features", "labels",
                                                          "seed"]), spec_value), max_size=3)) \
    .map(lambda t: f"kronecker:{t[0]}:{t[1]}" + (":" + ",".join(f"{k}={v}" for k, v in t[2])
                                                 if t[2] else ""))


small_planted = st.builds(
    lambda n, c, f, deg, ml: f"planted:nodes={n},classes={c},features={f},degree={deg},"
                             f"multilabel={ml}", st.integers(0, 400), st.integers(0, 12),
    st.integers(0, 8), st.floats(0, 20), st.sampled_from(["0", "1", "yes", "2"]))


@FUZZ
@given(st.one_of(planted_spec, kron_spec, small_planted, st.text(max_size=20),
                 st.text(max_size=20).map(lambda s: "kronecker:" + s)))
def test_generator_specs(spec):
    with small_memory():
        ds = outcome(load_dataset, spec)
    if ds is not None:
        ds.validate()
        assert np.isfinite(ds.features).all()


def test_small_memory_budget_refuses_large_specs_quickly():
    with small_memory(), pytest.raises(ScaleGNNError, match="memory"):
        load_dataset("kronecker:16:16")
    with small_memory(), pytest.raises(ScaleGNNError, match="planted:nodes=2000000"):
        load_dataset("planted:nodes=2000000")
    with small_memory():
        assert load_dataset("planted:nodes=300").num_nodes == 300
