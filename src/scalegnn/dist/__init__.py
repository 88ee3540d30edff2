"""Partition-parallel full-graph training with boundary-node sampling (BNS-GCN).

``partition`` (node -> part, plan writer), ``plan`` (PartitionPlan: the on-disk format),
``exchange`` (boundary exchange autograd Function + per-epoch sampling), ``trainer``
(DistTrainer: one rank), ``launch`` (torchrun entry points).
"""
from scalegnn.dist.plan import PartitionPlan, RankPart

__all__ = ["PartitionPlan", "RankPart"]
