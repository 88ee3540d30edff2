"""Partition-parallel full-graph training with boundary-node sampling (BNS-GCN).

``partition`` (node -> part: HP / GP / RP; :func:`partition_dataset` writes a plan, and
:func:`write_plan` the plan of any assignment), ``hypergraph`` (column-net hypergraph through
Mt-KaHyPar), ``graphs`` (the partitioners' CSR helpers), ``accounting`` (exact volume / messages
/ balance of an assignment), ``compare`` (``partition compare``), ``shp`` (stochastic
hypergraph for minibatches), ``plan`` (:class:`PartitionPlan`: the on-disk format),
``exchange`` (boundary exchange autograd Functions and per-epoch boundary sampling),
``forward`` (overlapped forward: inner SpMM while messages fly), ``mode`` (DistributedMode: one
rank's partition as a Batch, run by the one training loop ``scalegnn.train.Trainer``),
``launch`` (starts and watches the ranks of ``scalegnn dist-train``; each rank runs
``scalegnn.cli.dist.worker_main``), ``dataload`` (dataset seam). Configuration: the
``distributed:`` section of the one config schema (``scalegnn.config``).
"""
from scalegnn.dist.partition import assign, partition_dataset, write_plan
from scalegnn.dist.plan import PartitionPlan, RankPart

__all__ = ["PartitionPlan", "RankPart", "partition_dataset", "write_plan", "assign"]
