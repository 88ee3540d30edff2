"""What a run is built from before the loop starts: the device, the seeds, the model of a mode
and config (the one builder of training and of inference from a run directory), and the memory
guard of single-process runs."""

from __future__ import annotations

import numpy as np
import torch

from scalegnn.config import Config
from scalegnn.engine.memory_guard import check_training_memory, meta_device, shape_model
from scalegnn.engine.mode import Mode
from scalegnn.errors import ConfigError
from scalegnn.nn.pyg import as_model, network_model
from scalegnn.shadow.model import shadow_dims, shadow_net
from scalegnn.train.modes import GraphSAINTMode


def seed_everything(seed: int):
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def resolve_device(device) -> torch.device:
    """``cpu``, ``cuda[:N]`` or ``auto``; one line when CUDA is asked for and absent."""
    name = str(device or "cpu")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"--device: {name!r} is not a device (cpu, cuda, cuda:N, auto)") from None
    if dev.type not in ("cpu", "cuda"):
        raise ConfigError(f"--device: {name!r} is not supported (cpu, cuda, cuda:N, auto)")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"--device {name}: CUDA is not available here (torch "
                              f"{torch.__version__}, CUDA build: {torch.version.cuda or 'no'})")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ConfigError(f"--device {name}: only {torch.cuda.device_count()} CUDA devices")
    return dev


def build_run_model(mode: Mode, config: Config, model=None) -> torch.nn.Module:
    """The model a run of ``mode`` trains with ``config`` (the mode's own, e.g. shaDow's, or the
    zoo or PyG model of ``network``, :func:`~scalegnn.nn.pyg.network_model`): the one builder
    of training and of inference from a run.

    ``model``: a module given from Python (``Trainer(model=...)``) instead, a PyG one (forward
    ``(x, edge_index)``) wrapped by :func:`~scalegnn.nn.pyg.as_model`; run.json records its
    class as ``python_model``, and resuming or loading the run needs the same module again
    (``Trainer(..., resume=True, model=...)``, ``load_run(run, model=...)``)."""
    if model is not None:
        return as_model(model, mode.num_classes, mode.multilabel)
    net, params = config.network, config.params
    return mode.build_model(net, params) or network_model(
        mode.num_features, mode.num_classes, net, params["dropout"], mode.multilabel)


def shape_run_model(dataset, config: Config) -> torch.nn.Module:
    """The model a single-process run of ``config`` trains on ``dataset`` (the zoo model, or
    shaDow-GNN's :class:`~scalegnn.shadow.model.ShadowNet`), built on the meta device: its
    parameters' shapes and count, no memory (the memory guard's model term)."""
    if "shadow" not in config.sections:
        return shape_model(dataset, config)
    settings = config.section("shadow")
    in_dim, classes, multilabel, pair = shadow_dims(
        dataset.num_features, max(dataset.num_classes, 1), dataset.multilabel, settings)
    with meta_device():
        return shadow_net(in_dim, classes, config.network, config.params, settings,
                          multilabel=multilabel, pair=pair)


def guard_memory(source, config: Config, force: bool = False) -> None:
    """Refuse (DataError, one line) a single-process run (GraphSAINT or shaDow-GNN) whose
    estimated peak memory (:func:`scalegnn.engine.memory_guard.estimate_training_memory`) exceeds the
    available memory, unless ``force``. Distributed ranks (a prebuilt :class:`Mode`) hold
    their own partitions: unchecked here."""
    if isinstance(source, GraphSAINTMode):
        dataset = source.dataset
    elif isinstance(source, Mode):
        return
    else:
        dataset = source
    check_training_memory(dataset, config, force=force, model=shape_run_model(dataset, config))
