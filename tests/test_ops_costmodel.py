"""Cost model: sysfs cache parsing with fallbacks, the seeds' Q_f, block layout, picks."""

import numpy as np
import pytest

from scalegnn.ops import _kernels as K
from scalegnn.ops import costmodel as C
from scalegnn.ops.membw import triad_bandwidth


def _fake_sysfs(tmp_path, entries):
    for i, (level, kind, size, shared) in enumerate(entries):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
        (d / "shared_cpu_list").write_text(f"{shared}\n")
    return str(tmp_path)


def test_read_caches_from_sysfs(tmp_path):
    root = _fake_sysfs(tmp_path, [(1, "Data", "48K", "0"), (1, "Instruction", "32K", "0"),
                                  (2, "Unified", "2048K", "0"), (3, "Unified", "96M", "0-7,16-23")])
    c = C.read_caches(root)
    assert (c.l1, c.l2, c.l3, c.l3_sharing, c.source) == (48 << 10, 2 << 20, 96 << 20, 16, "sysfs")


def test_read_caches_fallbacks(tmp_path):
    assert C.read_caches(str(tmp_path / "missing")).source == "fallback"
    root = _fake_sysfs(tmp_path, [(2, "Unified", "garbage", "0")])
    c = C.read_caches(root)
    assert (c.l1, c.l2, c.l3) == (32 << 10, 1 << 20, 8 << 20)


def test_seeds_q_f_formula():
    # Q_f = max{p, s·n·f / S_cache}, rounded up to a multiple of p
    assert C.seeds_q_f(8000, 512, 8, 2, 1 << 20) == 32          # 8·8000·512/1MiB = 31.25
    assert C.seeds_q_f(100, 16, 4, 4, 1 << 20) == 4             # p wins
    assert C.seeds_q_f(8000, 512, 4, 3, 1 << 20) == 18          # 15.6 -> 16 -> 18


@pytest.mark.parametrize("f,itemsize,q_f,p", [(512, 4, 16, 2), (50, 4, 8, 2), (7, 8, 4, 4),
                                             (2048, 8, 100, 2)])
def test_feature_blocks_cover_f_line_aligned(f, itemsize, q_f, p):
    width, q = C.feature_blocks(f, itemsize, q_f, p)
    assert width * itemsize % C.LINE == 0
    assert q % p == 0 and q * width >= f and (q - p) * width < f   # no whole round of empties


def test_plan_prefers_rows_when_x_fits_l3_and_predicts_monotone():
    m = C.Machine(caches=C.Caches(32 << 10, 1 << 20, 32 << 20, 2, "test"))
    plan = C.plan_spmm(8000, 8000, 120000, 512, 4, 2, m)
    assert plan.kernel == "rows" and plan.tile == 512 and plan.prefetch == 0
    big = C.plan_spmm(50000, 50000, 750000, 512, 4, 2, m)
    assert big.prefetch == C.PREFETCH_LINES and big.tile == 512     # never below MIN_SLICE
    assert big.predicted["rows"] > plan.predicted["rows"]
    forced = C.plan_spmm(8000, 8000, 120000, 512, 4, 2, m, force="features")
    assert forced.kernel == "features" and forced.q_f % 2 == 0


def test_plan_features_when_private_caches_hold_the_blocks():
    """The seeds' regime: X far larger than the shared cache, blocks that fit private caches
    and a wide f make the feature-partitioned kernel the model's pick."""
    m = C.Machine(caches=C.Caches(32 << 10, 4 << 20, 4 << 20, 64, "test"), bw_dram=5e9)
    plan = C.plan_spmm(20000, 20000, 20000 * 40, 4096, 4, 64, m)
    assert plan.kernel == "features"


def test_triad_kernel_and_bandwidth():
    a = np.empty(1000)
    K.triad(a, np.arange(1000.0), np.full(1000, 2.0), 3.0)
    np.testing.assert_array_equal(a, np.arange(1000.0) + 6.0)
    r = triad_bandwidth(repeat=1, nbytes=1 << 20)
    assert r["triad_GBps"] > 0 and r["array_MiB"] >= 1
