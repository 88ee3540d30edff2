"""Partition-parallel full-graph training with boundary-node sampling (BNS-GCN).

``partition`` (node -> part: HP / GP / RP; plan writer for any assignment), ``hypergraph``
(column-net hypergraph through Mt-KaHyPar), ``accounting`` (exact volume / messages / balance
of an assignment), ``compare`` (``partition compare``), ``shp`` (stochastic hypergraph for
minibatches), ``plan``
(PartitionPlan: the on-disk format), ``exchange`` (boundary exchange autograd Functions and
per-epoch boundary sampling), ``forward`` (overlapped forward: inner SpMM while messages fly),
``mode`` (DistributedMode: one rank's partition as a Batch, run by the one training loop
``scalegnn.train.Trainer``), ``launch`` (rank entry point and the local supervisor behind
``scalegnn dist-train``), ``dataload`` (dataset seam). Configuration: the ``distributed:`` section
of the one config schema (``scalegnn.config``).
"""
from scalegnn.dist.plan import PartitionPlan, RankPart

__all__ = ["PartitionPlan", "RankPart"]
