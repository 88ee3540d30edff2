"""Shared fixtures.

``shared_data``: the folder of real datasets (``../shared/data`` next to the repository, or
``$SCALEGNN_SHARED_DATA``); tests that use it are skipped when it is absent.
``reference_run``: the uninterrupted CLI run of ``run_helpers.RUN``, made once per session;
``run_copy``: a private copy of it for a test to damage.
"""

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

# the shared helper modules assert like tests do: pytest rewrites their asserts too
pytest.register_assert_rewrite("bad_input_helpers", "data_helpers", "gloo_helpers",
                               "property_helpers", "run_helpers")

from run_helpers import reference_run_in  # noqa: E402  (after the rewrite hook)

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    env = os.environ.get("SCALEGNN_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _denormals_back_on():
    """A test that builds a Trainer without fit() leaves denormal flushing on for the process
    (params.flush_denormal); hypothesis refuses to run under flush-to-zero, so reset it."""
    yield
    import torch
    torch.set_flush_denormal(False)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    d = shared_data_dir()
    if not d.is_dir():
        pytest.skip(f"real datasets not found at {d} (set SCALEGNN_SHARED_DATA)")
    return d


def make_tiny_dataset(n: int = 40, num_features: int = 6, classes: int = 3,
                      multilabel: bool = False, seed: int = 0):
    """A small random Dataset with binary features (so every format can store it exactly)."""
    import numpy as np

    from scalegnn.data import Dataset
    from scalegnn.data._common import seeded_split
    from scalegnn.graph import Graph

    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, 4 * n)
    dst = rng.integers(0, n, 4 * n)
    g = Graph.from_edges(src, dst, n)
    x = (rng.random((n, num_features)) < 0.4).astype(np.float32)
    if multilabel:
        y = (rng.random((n, classes)) < 0.5).astype(np.float32)
    else:
        y = rng.integers(0, classes, n).astype(np.int64)
        y[:classes] = np.arange(classes)  # every class present
    tr, va, te = seeded_split(n, seed)
    return Dataset(g, x, y, tr, va, te, name="tiny", source="tiny",
                   metric="f1_micro" if multilabel else "accuracy").validate()


@pytest.fixture
def tiny():
    return make_tiny_dataset()


# ----------------------------------------------------------------------------- CLI runs
@pytest.fixture(scope="session")
def run_pool():
    """Two subprocess runs at a time (the reference run and the kill/resume pairs of
    ``test_resume`` are independent)."""
    with ThreadPoolExecutor(2) as ex:
        yield ex


@pytest.fixture(scope="session")
def reference_run_future(run_pool, tmp_path_factory):
    return run_pool.submit(reference_run_in, tmp_path_factory.mktemp("reference"))


@pytest.fixture(scope="session")
def reference_run(reference_run_future):
    """The uninterrupted run every resumed one must reproduce (``run_helpers.RUN``)."""
    return reference_run_future.result()


@pytest.fixture
def run_copy(reference_run, tmp_path):
    """A private copy of the finished reference run (mtimes kept)."""
    dst = tmp_path / "run"
    shutil.copytree(reference_run, dst, ignore=shutil.ignore_patterns(".lock"))
    return dst
