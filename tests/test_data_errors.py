"""Bad input -> a one-line DataError that names the file and the problem."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import make_tiny_dataset
from scalegnn.data import load_dataset
from scalegnn.data.graphsaint import save_graphsaint
from scalegnn.errors import DataError, ScaleGNNError


def expect(spec, *fragments, **kw):
    with pytest.raises(DataError) as ei:
        load_dataset(str(spec), **kw)
    msg = str(ei.value)
    assert "\n" not in msg
    for frag in fragments:
        assert frag in msg, msg
    return msg


@pytest.fixture
def gs(tmp_path):
    ref = make_tiny_dataset()
    save_graphsaint(ref, tmp_path / "gs")
    return tmp_path / "gs", ref


def test_missing_path_and_unknown_format(tmp_path):
    expect(tmp_path / "nope", "nope", "no such file")
    (tmp_path / "x.docx").write_text("hi")
    expect(tmp_path / "x.docx", "x.docx", "unknown dataset file type")
    (tmp_path / "empty").mkdir()
    expect(tmp_path / "empty", "empty", "unknown dataset folder")


def test_generator_spec_errors():
    with pytest.raises(DataError, match="kronecker:SCALE:EDGE_FACTOR"):
        load_dataset("kronecker:17")
    with pytest.raises(DataError, match="allowed keys"):
        load_dataset("planted:colour=3")
    with pytest.raises(DataError, match="bad value"):
        load_dataset("planted:nodes=many")
    with pytest.raises(DataError, match="p_in must be in"):
        load_dataset("planted:p_in=2")


@pytest.mark.parametrize("fname", ["adj_full.npz", "adj_train.npz", "role.json",
                                   "class_map.json", "feats.npy"])
def test_graphsaint_missing_file(gs, fname):
    folder, _ = gs
    (folder / fname).unlink()
    expect(folder, fname, "missing")


def test_graphsaint_train_graph_read_on_first_use(gs):
    """adj_train.npz is read only when asked for (a transductive run never holds it); a bad
    one then fails in one line naming the file, as it would have at load."""
    folder, ref = gs
    ds = load_dataset(str(folder))
    assert ds._train_graph is None and ds.has_train_graph
    assert ds.train_graph.num_edges == ref.train_graph.num_edges
    n = ref.num_nodes
    sp.save_npz(folder / "adj_train.npz", sp.random(n + 1, n + 1, density=0.1, format="csr"))
    ds = load_dataset(str(folder))
    with pytest.raises(DataError, match="adj_train.npz: has") as ei:
        ds.train_graph
    assert "\n" not in str(ei.value)


def test_graphsaint_feature_size_mismatch(gs):
    folder, ref = gs
    np.save(folder / "feats.npy", ref.features[:-1])
    expect(folder, "feats.npy", f"{ref.num_nodes - 1} rows", f"{ref.num_nodes} nodes")


def test_graphsaint_nan_features(gs):
    folder, ref = gs
    x = np.array(ref.features)
    x[3, 1] = np.nan
    np.save(folder / "feats.npy", x)
    expect(folder, "feats.npy", "NaN or inf")
    x[3, 1] = np.inf
    np.save(folder / "feats.npy", x)
    expect(folder, "feats.npy", "NaN or inf", mmap=True)


def test_graphsaint_non_square_and_bad_ids(gs):
    folder, ref = gs
    n = ref.num_nodes
    a = sp.random(n, n + 2, density=0.1, format="csr", random_state=0)
    sp.save_npz(folder / "adj_full.npz", a)
    expect(folder, "adj_full.npz", "not square")
    np.savez(folder / "adj_full.npz", indptr=np.array([0, 1, 2]), indices=np.array([1, -1]),
             shape=np.array([2, 2]), format=np.array(b"csr"))
    expect(folder, "adj_full.npz", "negative node id")
    np.savez(folder / "adj_full.npz", indptr=np.array([0, 1, 2]), indices=np.array([1, 5]),
             shape=np.array([2, 2]), format=np.array(b"csr"))
    expect(folder, "adj_full.npz", "out of range")
    a = sp.random(n, n, density=0.1, format="csc", random_state=0)
    sp.save_npz(folder / "adj_full.npz", a)
    expect(folder, "adj_full.npz", "'csc'")


def test_graphsaint_roles_and_labels(gs):
    folder, ref = gs
    role = json.load(open(folder / "role.json"))
    bad = dict(role, va=role["va"] + role["tr"][:1])
    json.dump(bad, open(folder / "role.json", "w"))
    expect(folder, str(folder), "train and val splits overlap")
    json.dump(dict(role, te=[]), open(folder / "role.json", "w"))
    expect(folder, "test split is empty")
    json.dump(dict(role, tr=role["tr"] + [ref.num_nodes]), open(folder / "role.json", "w"))
    expect(folder, "role.json", f"node id {ref.num_nodes}", "out of range")
    json.dump({k: v for k, v in role.items() if k != "va"}, open(folder / "role.json", "w"))
    expect(folder, "role.json", "'va'")
    json.dump(role, open(folder / "role.json", "w"))
    cmap = {str(i): int(c) for i, c in enumerate(ref.labels)}
    json.dump(dict(cmap, **{"0": -1}), open(folder / "class_map.json", "w"))
    expect(folder, "class_map.json", "negative")
    cmap.pop("0")
    cmap[str(ref.num_nodes)] = 1
    json.dump(cmap, open(folder / "class_map.json", "w"))
    expect(folder, "class_map.json", "out of range")
    ragged = {str(i): [1, 0] for i in range(ref.num_nodes)}
    ragged["3"] = [1]
    json.dump(ragged, open(folder / "class_map.json", "w"))
    expect(folder, "class_map.json", "same length")
    (folder / "class_map.json").write_text("{not json")
    expect(folder, "class_map.json", "invalid JSON")


def test_npz_refuses_pickle(tmp_path):
    ref = make_tiny_dataset()
    a = ref.graph.to_scipy()
    obj = np.empty(ref.num_nodes, dtype=object)
    obj[:] = [{"x": i} for i in range(ref.num_nodes)]
    np.savez(tmp_path / "p.npz", adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr,
             adj_shape=a.shape, attr_matrix=ref.features, labels=obj)
    expect(tmp_path / "p.npz", "p.npz", "'labels'", "unpickling")
    # an unneeded pickled entry is ignored
    np.savez(tmp_path / "q.npz", adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr,
             adj_shape=a.shape, attr_matrix=ref.features, labels=ref.labels, idx_to_node=obj)
    assert load_dataset(str(tmp_path / "q.npz")).num_nodes == ref.num_nodes
    (tmp_path / "r.npz").write_bytes(b"garbage")
    expect(tmp_path / "r.npz", "r.npz", "not a readable .npz")
    np.savez(tmp_path / "s.npz", foo=np.arange(3))
    expect(tmp_path / "s.npz", "s.npz", "unknown .npz layout")


def test_npz_bad_contents(tmp_path):
    ref = make_tiny_dataset()
    n = ref.num_nodes
    src, dst = ref.graph.edge_index()
    edges = np.stack([src, dst], 1)
    masks = np.zeros((1, n), bool)
    masks[0, :10] = True
    good = dict(node_features=ref.features, node_labels=ref.labels, edges=edges,
                train_masks=masks, val_masks=np.roll(masks, 10), test_masks=np.roll(masks, 20))
    np.savez(tmp_path / "h.npz", **dict(good, edges=np.r_[edges, [[0, n + 3]]]))
    expect(tmp_path / "h.npz", "h.npz", f"node id {n + 3}", "out of range")
    np.savez(tmp_path / "h.npz", **dict(good, edges=np.r_[edges, [[-2, 1]]]))
    expect(tmp_path / "h.npz", "h.npz", "negative node id -2")
    np.savez(tmp_path / "h.npz", **dict(good, node_labels=ref.labels[:-1]))
    expect(tmp_path / "h.npz", "h.npz", f"{n - 1} labels for {n} nodes")
    np.savez(tmp_path / "h.npz", **dict(good, node_labels=np.r_[ref.labels[:-1], -1]))
    expect(tmp_path / "h.npz", "h.npz", "label id -1")
    np.savez(tmp_path / "h.npz", **dict(good, val_masks=masks))
    expect(tmp_path / "h.npz", "train and val splits overlap")
    np.savez(tmp_path / "h.npz", **good)
    expect(tmp_path / "h.npz", "split 3 out of range", split=3)
    a = ref.graph.to_scipy()
    np.savez(tmp_path / "c.npz", adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr,
             adj_shape=a.shape, attr_matrix=ref.features, labels=ref.labels,
             class_names=np.array(["a", "b"]))
    expect(tmp_path / "c.npz", "c.npz", "label id 2 is out of range for the 2 classes")
    np.savez(tmp_path / "b.npz", adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr,
             adj_shape=a.shape, attr_matrix=ref.features[:-2], labels=ref.labels)
    expect(tmp_path / "b.npz", "b.npz", f"{n - 2} rows")


def test_csv_errors(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    (d / "x_edges.csv").write_text("id_1,id_2\n0,1\n1,2\n")
    expect(d, "no labels CSV")
    (d / "x_target.csv").write_text("id,page_type\n0,a\n1,b\n")
    expect(d, "x_edges.csv", "node id 2", "out of range for 2 nodes")
    (d / "x_edges.csv").write_text("id_1,id_2\n0,1\n1,x\n")
    expect(d, "x_edges.csv", "bad edge list")
    (d / "x_edges.csv").write_text("id_1,id_2\n0,1\n")
    (d / "x_target.csv").write_text("id,page_type\n0,a\n1,b\n")
    (d / "x.json").write_text(json.dumps({"0": [1], "5": [2]}))
    expect(d, "x.json", "node id 5")
    (d / "x.json").write_text(json.dumps({"0": [-1]}))
    expect(d, "x.json", "negative feature id")


def test_mat_errors(tmp_path):
    import scipy.io as sio
    sio.savemat(tmp_path / "m.mat", {"network": sp.csc_matrix(np.eye(3))})
    expect(tmp_path / "m.mat", "m.mat", "'group'")
    sio.savemat(tmp_path / "m.mat", {"network": sp.csc_matrix(np.ones((3, 4))),
                                     "group": np.eye(3)})
    expect(tmp_path / "m.mat", "m.mat", "not square")
    sio.savemat(tmp_path / "m.mat", {"network": sp.csc_matrix(np.ones((3, 3))),
                                     "group": 2 * np.eye(3)})
    expect(tmp_path / "m.mat", "m.mat", "only 0 and 1")
    (tmp_path / "m.mat").write_bytes(b"garbage" * 30)
    expect(tmp_path / "m.mat", "m.mat", "not a readable .mat")


def test_errors_are_scalegnn_errors():
    assert issubclass(DataError, ScaleGNNError)
