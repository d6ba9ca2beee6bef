"""The three kinds of failure, kept apart.

* :class:`ParityUsageError`: the case or call is wrong (bad argument, unmappable weights, a net
  that rejects its inputs). Fix the test.
* :class:`ParityMismatch`: the frameworks disagree. An ``AssertionError``, so pytest shows it
  as a test failure.
* :class:`ParityInternalError`: parity itself broke. Please report it.

:class:`ParityNoRepro` says why no standalone repro of a mismatch could be written;
:class:`ParityWarning` that a check passed but proves less than it seems.
"""

from __future__ import annotations

__all__ = [
    "ParityError",
    "ParityUsageError",
    "ParityUnsupported",
    "ParityMismatch",
    "ParityInternalError",
    "ParityNoRepro",
    "ParityWarning",
]


class ParityError(Exception):
    """Base of every error raised by parity."""


class ParityUsageError(ParityError, ValueError):
    """The case, the call or the configuration is wrong; the message says what to write instead."""


class ParityUnsupported(ParityUsageError):
    """MindSpore has no counterpart for this feature (on this device or version): the registry
    entry says why. Catalogue cases expect it with ``xfail=...``."""


class ParityMismatch(ParityError, AssertionError):
    """MindSpore and PyTorch computed different numbers (or shapes, dtypes, non-finite values).

    ``result`` holds the full :class:`parity.Result` of the failed check; ``likely_causes`` the
    "Likely cause" lines of the message, without the prefix, most likely first.
    """

    def __init__(self, message: str, result=None, likely_causes=()):
        super().__init__(message)
        self.result = result
        self.likely_causes = list(likely_causes)


class ParityInternalError(ParityError, RuntimeError):
    """A bug in parity, not in the case: the message says so and what to report."""

    def __init__(self, message: str):
        super().__init__(
            f"{message}\nThis is a bug in pytest-parity, not in your case; please report it with the full traceback."
        )


class ParityNoRepro(ParityError):
    """No standalone repro of a mismatch was written (``Result.write_repro``): no part of the pair
    could be rebuilt on its own, none failed on its own, or the file written did not fail as the
    check did. The message says which; nothing is left on disk."""


class ParityWarning(UserWarning):
    """A check passed, but proves less than a pass seems to: most of the values it compared lie
    within their absolute tolerance of zero (the message names them and what to do). The same
    text is among the :class:`parity.Result`'s notes."""
