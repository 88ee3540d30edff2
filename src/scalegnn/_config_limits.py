"""Moved: the config's checks are :mod:`scalegnn.config.checks` and its schema (ranges
included) :mod:`scalegnn.config.schema`. This module only keeps ``LR_SCHEDULES`` importable
for ``train/optim.py`` until that import moves with the engine restructure; then it goes."""

from scalegnn.config.schema import LR_SCHEDULES

__all__ = ["LR_SCHEDULES"]
