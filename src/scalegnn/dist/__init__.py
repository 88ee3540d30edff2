"""Partition-parallel full-graph training with boundary-node sampling (BNS-GCN).

``partition`` (node -> part: METIS / random; plan writer for any assignment), ``plan``
(PartitionPlan: the on-disk format), ``exchange`` (boundary exchange autograd Functions and
per-epoch boundary sampling), ``forward`` (overlapped forward: inner SpMM while messages fly),
``config`` (DistConfig), ``trainer`` (DistTrainer: one rank), ``launch`` (torchrun entry
points), ``dataload`` (dataset seam).
"""
from scalegnn.dist.plan import PartitionPlan, RankPart

__all__ = ["PartitionPlan", "RankPart"]
