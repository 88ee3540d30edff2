"""Shared by the property tests (``test_properties_config.py``, ``test_properties_data.py``): the
hypothesis settings, the check that an input either works or is refused with a one-line
:class:`ScaleGNNError` (:func:`outcome`), a temporary folder per example, and JSON-like values.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

from scalegnn.errors import ScaleGNNError

# SCALEGNN_FUZZ_EXAMPLES=2000 fuzzes deeper with fresh random examples (default: a fixed set)
DEEP = int(os.environ.get("SCALEGNN_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=DEEP or 60, deadline=None, derandomize=not DEEP,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])
FEW = settings(FUZZ, max_examples=DEEP or 30)


def outcome(fn, *args, **kw):
    """``fn(...)`` or None when it raised a one-line ScaleGNNError; anything else propagates."""
    try:
        result = fn(*args, **kw)
    except ScaleGNNError as e:
        assert "\n" not in str(e), repr(str(e))
        assert str(e).strip(), "empty error message"
        event(f"refused ({type(e).__name__})")   # --hypothesis-show-statistics
        return None
    event("accepted")
    return result


@contextmanager
def tmpdir():
    with tempfile.TemporaryDirectory(prefix="scalegnn-prop-") as d:
        yield Path(d)


# ----------------------------------------------------------------------------- value strategies
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12),
                    st.integers(-3, 4096), st.sampled_from(["nan", ".inf", "1e12", "rw", "1-0"]))
json_like = st.recursive(scalars, lambda c: st.one_of(
    st.lists(c, max_size=4), st.dictionaries(st.text(max_size=8), c, max_size=4)), max_leaves=16)
