"""The parts of the one training engine that every mode shares, below the modes themselves.

=========================  ===================================================================
:mod:`.mode`               the :class:`~scalegnn.engine.mode.Mode` protocol a batch source
                           implements (GraphSAINT, shaDow-GNN, distributed)
:mod:`.optim`              fused Adam and the learning-rate schedules
:mod:`.metrics`            accuracy / F1 / ROC-AUC, link-prediction Hits@K and MRR
:mod:`.evaluate`           full-graph inference in row blocks (layer-wise path)
:mod:`.neighbourhood`      ... and the neighbourhood path for graphs whose activations do
                           not fit
:mod:`.checkpoint`         ``last.pt`` / ``best.pt``: what exact resume needs, read with
                           ``weights_only=True``
:mod:`.rundir`             the run directory: lock, ``run.json``, ``metrics.jsonl``, summary
:mod:`.loggers`            CSV / TensorBoard copies of the per-epoch records
:mod:`.console`            progress bar and summary lines
:mod:`.jitclock`           numba compilation time, reported apart from training time
:mod:`.memory_guard`       the peak-memory estimate checked before a run starts
=========================  ===================================================================

The loop that drives them is :class:`scalegnn.train.Trainer`; the modes live in
:mod:`scalegnn.train` (GraphSAINT), :mod:`scalegnn.shadow` and :mod:`scalegnn.dist`.
"""
