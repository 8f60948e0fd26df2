"""The exceptions of rlswarm.

Every error of the C++ libraries arrives in Python as the class below with the
same name (``rlswarm::InvalidArgument`` -> :class:`InvalidArgument`). Each is an
:class:`Error` and, where one fits, also a built-in exception, so
``except ValueError`` catches a bad action as it would in any Python env.
"""

from __future__ import annotations


class Error(Exception):
    """Base of every rlswarm exception."""


class InvalidArgument(Error, ValueError):
    """The caller passed something malformed: an action out of range, a bad option."""


class NotFound(Error, LookupError):
    """A named thing does not exist, e.g. an unknown env name."""


class FailedPrecondition(Error, RuntimeError):
    """The call is valid but not now: stepping before reset or after an episode
    ended, or one env used from two threads at once."""


class DeadlineExceeded(Error, TimeoutError):
    """A deadline passed before the call completed."""


class Unavailable(Error, ConnectionError):
    """A service could not be reached."""


class ResourceExhausted(Error):
    """A queue or buffer is full."""


class Cancelled(Error):
    """The call was cancelled (e.g. by a close)."""


class DataLoss(Error):
    """Stored data is truncated or corrupt."""


class Internal(Error):
    """A broken invariant inside rlswarm."""


# Keyed by the C++ StatusCode (common/errors.h); the extension looks up here.
_BY_CODE: dict[int, type[Error]] = {
    1: InvalidArgument,
    2: NotFound,
    3: FailedPrecondition,
    4: DeadlineExceeded,
    5: Unavailable,
    6: ResourceExhausted,
    7: Cancelled,
    8: DataLoss,
    9: Internal,
}

__all__ = [
    "Error",
    "InvalidArgument",
    "NotFound",
    "FailedPrecondition",
    "DeadlineExceeded",
    "Unavailable",
    "ResourceExhausted",
    "Cancelled",
    "DataLoss",
    "Internal",
]
