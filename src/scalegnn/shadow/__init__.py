"""shaDow-GNN: decoupled depth and scope (SPEC §4; thesis chapter 5).

For each target node v an extractor returns a small node-induced subgraph G[v] (L-hop with a
per-hop fan-out budget, or the top nodes of an approximate personalized PageRank from v); an
L'-layer GNN from ``scalegnn.nn`` runs on G[v] only (L' may exceed the hop count); a readout pools
G[v]'s last-layer vectors into v's embedding (center, sum, mean, max, sort-k, or center
concatenated with a pooled vector); an ensemble runs several extractors in branches combined by
learned attention. Training and inference are minibatched over targets: many G[v] form one
block-diagonal :class:`~scalegnn.batch.Batch`.

Modules (one job each):

* ``_khop_kernels``, ``_ppr_kernels``, ``_block_kernels``  numba kernels (k-hop scopes, PPR
  push, block-diagonal assembly), on the node-id hash tables of ``_hash_table_kernels``
* ``extract``   :class:`TargetSubgraphs`, the shared block assembly, :class:`KHopExtractor`
* ``ppr``       :class:`PPRExtractor` (top-k approximate PPR scopes, cached lists)
* ``reference`` slow, obviously correct extractors for the tests (BFS, power-iteration PPR)
* ``readout``   pooling of each block's rows into one vector per target
* ``model``     :class:`ShadowNet`: backbone(s) from ``scalegnn.nn`` + readout + (ensemble) + head
* ``batch``     TargetSubgraphs + features + labels -> Batch; background pool
* ``mode``      :class:`ShadowMode`, the training mode run by ``scalegnn.train.Trainer``
* ``link``      link prediction: edge split, negative sampling, pair subgraphs, Hits@K / MRR
* ``labels``    link prediction: structural labels (distances to the two ends of a pair)

The contract between extractors and the rest (``extract.TargetSubgraphs``), B targets::

    targets  (B,)    int64   parent id of each target (for a pair task: the source ends)
    offsets  (B+1,)  int64   block k holds rows offsets[k]:offsets[k+1] of the stack
    nodes    (n,)    int64   parent id of each row; inside a block, ascending parent ids
    center   (B,)    int64   stack row of each target (for a pair task: of the source end)
    center2  (B,) or None    stack row of the second end of each pair (pair tasks only)
    indptr   (n+1,)  int64   block-diagonal CSR of the induced subgraphs: row r's neighbours
    indices  (nnz,)  int64   are stack rows inside r's own block (no self loops added)

In a Batch: ``nodes``, ``adj`` (that CSR with ``data`` = 1 / in-block degree, the mean
aggregation of GraphSAINT's layers; or, ``shadow.adj_norm: sym``, GCN's symmetric operator with
self loops), ``x`` (features of ``nodes``), ``segment`` (block id of each
row, int64), ``targets`` (= ``center``), ``y`` and ``loss_weight`` one entry PER TARGET; an
ensemble's batch keeps one such Batch per branch in ``meta["branches"]`` (all with the same
targets) and carries ``y`` / ``loss_weight`` itself.
"""
