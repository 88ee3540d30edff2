"""The numba float kernels give the same bits whether a process compiled them or loaded them
from numba's cache (``cache=True``). With fastmath 'reassoc' on its row sums, the float32
fused-tail backward summed in a different order in the two cases (numba re-optimizes a
parallel kernel when it links it), so data-parallel ranks that loaded the kernels and a
process that had compiled them disagreed in a weight by 8e-6 after 3 Adam steps
(tests/test_dist_data_parallel.py failed only in CI, where the cache starts empty).

Run as a script, this file prints one digest per kernel output; the test runs it twice on an
empty cache directory (compile, then load) and compares the digests."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest


def _digest(*ts) -> str:
    import torch
    raw = b"".join(np.ascontiguousarray(t.detach().numpy() if torch.is_tensor(t) else t)
                   .tobytes() for t in ts)
    return hashlib.md5(raw).hexdigest()


def _probe() -> list[str]:
    import torch

    from scalegnn.engine.optim import Adam
    from scalegnn.nn.dropout import fast_dropout
    from scalegnn.ops.adj import SparseAdj
    from scalegnn.ops.fused import bias_act_norm_concat, l2_normalize
    from scalegnn.ops.spmm import spmm_forward
    lines = []
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.float64):
        def rand(*shape, dtype=dtype):
            return torch.randn(*shape, generator=g, dtype=dtype, requires_grad=True)
        for n, d in ((37, 12), (200, 24)):
            terms, params = [rand(n, d) for _ in range(2)], [rand(d) for _ in range(6)]
            y = bias_act_norm_concat(terms, params[0:2], params[2:4], params[4:6])
            y.backward(torch.randn(y.shape, generator=g, dtype=dtype))
            lines.append(f"tail {dtype} {n} {_digest(y, *(p.grad for p in terms + params))}")
            x = rand(n, d)
            z = l2_normalize(x)
            z.backward(torch.randn(z.shape, generator=g, dtype=dtype))
            lines.append(f"l2 {dtype} {n} {_digest(z, x.grad)}")
        x = rand(500, 333)
        y = fast_dropout(x, 0.3, key=7)
        y.backward(torch.randn(y.shape, generator=g, dtype=dtype))
        lines.append(f"dropout {dtype} {_digest(y, x.grad)}")
        params = [rand(s) for s in (7, 300000)]
        opt = Adam(params, lr=0.01, weight_decay=1e-4)
        for _ in range(3):
            for p in params:
                p.grad = torch.randn(p.shape, generator=g, dtype=dtype) * 1e-3
            opt.step()
        lines.append(f"adam {dtype} {_digest(*params)}")
    rng = np.random.default_rng(1)
    n, nnz = 2000, 20000
    rows, cols = np.sort(rng.integers(0, n, nnz)), rng.integers(0, n, nnz)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
    for dt in (np.float32, np.float64):
        adj = SparseAdj(indptr, cols, rng.random(nnz).astype(dt), n)
        for f in (13, 300):
            x = torch.from_numpy(rng.standard_normal((n, f)).astype(dt))
            for kernel in ("rows", "features"):
                lines.append(f"spmm {dt.__name__} {f} {kernel} "
                             f"{_digest(spmm_forward(adj, x, kernel))}")
    return lines


@pytest.mark.slow
def test_compiled_and_cached_kernels_give_the_same_bits(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}

    def run() -> list[str]:
        out = subprocess.run([sys.executable, __file__], env=env, capture_output=True,
                             text=True, timeout=600, check=True).stdout
        return out.splitlines()
    compiled = run()
    assert any((tmp_path / "numba").rglob("*.nbc"))      # the first run wrote the cache
    loaded = run()
    assert len(compiled) == 20
    assert compiled == loaded


if __name__ == "__main__":
    print("\n".join(_probe()))
