"""Overlapped distributed forward of :class:`~scalegnn.nn.models.GraphSAINTNet`.

The model's ``exchange`` hook must return all boundary rows before the layer starts, so nothing
overlaps the wait. This forward computes the same function but splits each order-1 layer's
aggregation into ``Â h = Â_in h_in + Â_bd h_bd``::

    x      = dropout(h_in)                       (owner-side dropout, as in full-batch training)
    src    = x W_1  if out_dim < in_dim else x   (exchange the NARROWER side: fewer bytes)
    post   isend(src[requested rows]), irecv(kept boundary rows)
    local  = Â_in src                            <- runs while the messages fly
    bd     = wait()                              (BoundaryRows: backward returns the gradients)
    y      = local + Â_bd bd ;  term_1 = y  or  y W_1
    out    = layer.combine([x W_0, term_1])

With dropout 0 and p = 1 it equals ``model(x, Â_full)`` on the inner rows (tested against the
single-process reference); orders >= 2 are refused by the config.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from scalegnn.dist.exchange import BoundaryExchange, BoundaryRows
from scalegnn.ops import spmm


def overlapped_layer(layer, h: torch.Tensor, ex: BoundaryExchange, index: int, split) -> torch.Tensor:
    adj_in, adj_bd = split
    x = layer.dropout(h)
    terms = [x @ layer.weights[0]]
    narrow = layer.out_dim < layer.in_dim
    src = x @ layer.weights[1] if narrow else x
    handle = ex.post_forward(src.detach(), index)
    t0 = time.perf_counter()
    local = spmm(adj_in, src)                    # the inner-inner SpMM overlaps the exchange
    ex.stats.overlap_s += time.perf_counter() - t0
    bd = BoundaryRows.apply(src, ex, handle, index)
    y = local + spmm(adj_bd, bd)   # always in the graph, even with no kept rows: the owners'
    # gradient messages are answered only if every rank runs BoundaryRows.backward
    terms.append(y if narrow else y @ layer.weights[1])
    return layer.combine(terms)


def overlapped_forward(model, x: torch.Tensor, ex: BoundaryExchange, split=None) -> torch.Tensor:
    """Logits of the inner rows; ``split`` = (Â_in, Â_bd), default the exchange's current one."""
    split = ex.split if split is None else split
    h = x
    for i, layer in enumerate(model.layers):
        h = overlapped_layer(layer, h, ex, i, split) if layer.order > 0 else layer(h, None)
    return model.classifier(F.normalize(h, p=2, dim=1))
