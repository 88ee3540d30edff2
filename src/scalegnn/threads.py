"""One thread count for torch (GEMMs, elementwise) and numba (SpMM, samplers)."""


def set_threads(n: int) -> int:
    """Use ``n`` threads in torch and numba (numba capped at its pool size); ``n <= 0`` keeps
    the defaults. Returns torch's thread count."""
    import numba
    import torch
    if n > 0:
        torch.set_num_threads(n)
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    return torch.get_num_threads()
