"""Errors raised at the library's boundary.

Every user-facing mistake (bad file, bad shape, bad config value) raises a subclass of
:class:`ScaleGNNError` whose message is one line naming the file or parameter and the problem.
The CLI prints that line and exits with status 2; it never shows a traceback for these.
"""


class ScaleGNNError(Exception):
    """Base class for errors caused by user input."""

    def __str__(self) -> str:  # keep the message on one line whatever was passed in
        return " ".join(str(a) for a in self.args).replace("\n", " ")


class DataError(ScaleGNNError):
    """A dataset file is missing, malformed or inconsistent."""


class GraphError(ScaleGNNError):
    """A graph is structurally invalid (indptr, ids, shapes, dtypes)."""


class ConfigError(ScaleGNNError):
    """A configuration key or value is invalid."""


class PlanError(ScaleGNNError):
    """A partition plan is missing, incomplete or does not match its dataset."""


class DistError(ScaleGNNError):
    """A distributed run failed (a rank died, a timeout passed)."""


class TrainingError(ScaleGNNError):
    """Training cannot go on (the loss became NaN/inf, a checkpoint does not fit the run)."""


class WriteError(ScaleGNNError):
    """A file cannot be written (a full disk or quota, a read-only or forbidden folder); raised
    by :mod:`scalegnn.io`'s writers, naming the file the user asked for, never a temporary.
    ``path`` and ``reason`` hold the two parts of the message."""

    path = None
    reason = ""
