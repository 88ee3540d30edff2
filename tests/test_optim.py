"""The training Adam (every mode) follows torch.optim.Adam step for step, and its state round-trips."""

import torch

from scalegnn.engine.optim import Adam


def _run(opt_cls, steps, wd, state=None):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(5, 3, dtype=torch.float64)),
              torch.nn.Parameter(torch.randn(3, dtype=torch.float64))]
    opt = opt_cls(params, lr=0.05, weight_decay=wd)
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(((p - torch.randn(p.shape, generator=gen, dtype=p.dtype)) ** 2).sum()
                   for p in params)
        loss.backward()
        opt.step()
    return params, opt


def test_matches_torch_adam():
    for wd in (0.0, 0.01):
        ours, _ = _run(Adam, 7, wd)
        ref, _ = _run(torch.optim.Adam, 7, wd)
        for a, b in zip(ours, ref):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_state_round_trip():
    params, opt = _run(Adam, 3, 0.0)
    fresh = Adam(params, lr=0.05)
    fresh.load_state_dict(opt.state_dict())
    assert fresh.step_count == 3
    for a, b in zip(fresh.exp_avg_sq, opt.exp_avg_sq):
        torch.testing.assert_close(a, b)


def test_parameters_the_kernel_does_not_take_follow_torch_adam():
    """Non-contiguous, float16 and float32 parameters side by side: the kernel takes the
    contiguous float one, torch's multi-tensor ops (the GPU path) update the others."""
    def run(opt_cls, wd):
        torch.manual_seed(0)
        params = [torch.nn.Parameter(torch.randn(4, 6).t()),            # non-contiguous
                  torch.nn.Parameter(torch.randn(5, dtype=torch.float16)),
                  torch.nn.Parameter(torch.randn(3, 2)),                # fused kernel
                  torch.nn.Parameter(torch.randn(7, 2).t())]
        opt = opt_cls(params, lr=0.05, weight_decay=wd)
        gen = torch.Generator().manual_seed(1)
        for _ in range(6):
            for p in params:
                p.grad = torch.randn(p.shape, generator=gen).to(p.dtype)
            opt.step()
        return params

    for wd in (0.0, 0.01):
        for a, b in zip(run(Adam, wd), run(torch.optim.Adam, wd), strict=True):
            tol = 1e-3 if a.dtype == torch.float16 else 1e-6
            torch.testing.assert_close(a, b, rtol=tol, atol=tol)
