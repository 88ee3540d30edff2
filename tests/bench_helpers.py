"""Checks shared by the ``scalegnn bench`` tests: the cost fields every JSON line carries
(:mod:`scalegnn.bench.measure`)."""

from __future__ import annotations

import json

import pytest


def lines(capsys) -> list[dict]:
    """The JSON lines the command printed to stdout."""
    return [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]


def assert_cost(rec: dict, unit: str | None = None) -> None:
    """``rec`` has ``wall_s``, ``cpu_s`` and a 3-value ``load_avg``; with ``unit`` also
    ``<unit>s_timed`` and ``wall_per_<unit>`` / ``cpu_per_<unit>`` consistent with them."""
    assert rec["wall_s"] >= 0 and rec["cpu_s"] >= 0, rec
    load = rec["load_avg"]
    assert len(load) == 3 and all(isinstance(v, float) and v >= 0 for v in load), rec
    if unit is not None:
        n = rec[f"{unit}s_timed"]
        assert n >= 1, rec
        assert rec[f"wall_per_{unit}"] == pytest.approx(rec["wall_s"] / n)
        assert rec[f"cpu_per_{unit}"] == pytest.approx(rec["cpu_s"] / n)
