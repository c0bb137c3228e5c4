"""The typed error and warning hierarchy of dpbandits.

Every error raised at a public boundary is a :class:`DPBanditsError`. Errors that correspond to a
built-in category also inherit from it (``InvalidParameterError`` is a ``ValueError``), so callers
can catch either. Messages name the parameter, the constraint and the value found, for example
``epsilon must be a finite float > 0; got -1.0``.
"""

from __future__ import annotations

__all__ = [
    "DPBanditsError",
    "DPBanditsWarning",
    "DataFormatError",
    "DependencyNotInstalledError",
    "EmptySupportError",
    "ExperimentalWarning",
    "ForkRefusedError",
    "InsecureNoiseWarning",
    "InvalidActionError",
    "InvalidParameterError",
    "LedgerCorruptError",
    "LedgerNotFoundError",
    "LedgerStorageError",
    "LedgerUnitError",
    "NotFittedError",
    "NumericsWarning",
    "PaperVariantWarning",
    "PerInstanceSpendError",
    "PrivacyBudgetExceededError",
    "PrivacyWarning",
    "StudyError",
    "UnknownParameterError",
    "UnsafeTargetError",
    "UnsupportedEventError",
    "UserAlgorithmError",
]


class DPBanditsError(Exception):
    """Base class of every error raised by dpbandits."""


class InvalidParameterError(DPBanditsError, ValueError):
    """A parameter or an input array violates its documented constraint."""


class UnknownParameterError(InvalidParameterError, TypeError):
    """A keyword argument that the function or constructor does not have (a typo, usually).

    The message names the keyword and the closest parameter. It is also a ``TypeError``, what Python
    raises for an unexpected keyword, so ``except TypeError`` keeps working.
    """


class InvalidActionError(DPBanditsError, ValueError):
    """An action (arm, pair, point) is outside the action set of an environment or agent."""


class NotFittedError(DPBanditsError, RuntimeError, AttributeError):
    """A learned attribute was used before ``fit`` (or an agent's ``recommendation`` before it is done).

    It is also an ``AttributeError``, as scikit-learn's ``NotFittedError`` is: ``hasattr(agent,
    "recommendation")`` is False on an unfinished agent, ``getattr(agent, "recommendation", None)``
    returns the default and ``inspect.getmembers`` skips it.
    """


class EmptySupportError(DPBanditsError, ValueError):
    """A distribution has no action with positive probability."""


class UnsupportedEventError(DPBanditsError, TypeError):
    """An accountant was asked to account for an event it cannot bound."""


class PrivacyBudgetExceededError(DPBanditsError):
    """An operation would spend more privacy budget than allowed; raised *before* spending."""


class ForkRefusedError(PrivacyBudgetExceededError):
    """A saved generation is being continued a second time under one ledger (a fork), and forks are refused.

    Users seen before the save would be in two continuations; pass ``on_fork="charge"`` to pay for
    the second continuation afresh instead.
    """


class LedgerUnitError(DPBanditsError, ValueError):
    """A spend protects another unit or neighbouring relation than its ledger, and no conversion was stated."""


class PerInstanceSpendError(DPBanditsError, ValueError):
    """A per-instance (data-dependent) guarantee was spent: its ε itself would reveal the data.

    Spend the data-independent guarantee over a declared public domain instead.
    """


class LedgerNotFoundError(DPBanditsError, LookupError):
    """A durable ledger opened by its id does not exist: no file, no ledger tables, or no row for the id."""


class LedgerCorruptError(DPBanditsError, ValueError):
    """A durable ledger's recorded state cannot be read completely or fails its hash chain; it is refused."""


class LedgerStorageError(DPBanditsError, OSError):
    """The database under a durable ledger failed (not a database, full, read-only, locked, a conflict).

    ``database_error`` is the database driver's exception (SQLAlchemy's) when there was one, so that a
    caller can tell a failure a retry can fix (a terminated connection, a serialization failure) from
    one it cannot; the message is one line either way.
    """

    database_error: BaseException | None = None


class DependencyNotInstalledError(DPBanditsError, ImportError):
    """An optional dependency is needed for this feature; the message names the extra."""


class DataFormatError(DPBanditsError, ValueError):
    """A data file is malformed; the message names the row and the column."""


class UnsafeTargetError(DPBanditsError, OSError):
    """A file would be written over a symbolic link or something that is not a regular file."""


class StudyError(DPBanditsError):
    """A study cannot be run as asked (invalid study file, a run directory of another study, ...)."""


class UserAlgorithmError(DPBanditsError):
    """A user's own algorithm (named by import path or entry point) cannot be loaded or failed.

    The message names the algorithm and the step; the user's exception is chained as ``__cause__``
    (``DPBANDITS_DEBUG=1`` shows its traceback on the command line).
    """


class DPBanditsWarning(UserWarning):
    """Base class of every warning issued by dpbandits."""


class PrivacyWarning(DPBanditsWarning):
    """Legal but weak or surprising privacy: large epsilon, a guarantee that needs care."""


class PaperVariantWarning(PrivacyWarning):
    """A formula taken verbatim from a paper where the paper is known to be wrong."""


class InsecureNoiseWarning(PrivacyWarning):
    """Privacy noise was seeded on a release path (``insecure_seeded_noise=True``).

    Seeded floating-point noise is reproducible, which is what simulations need, and is **not**
    differentially private in deployment: whoever knows the seed computes the noise, so the output
    is a deterministic function of the data.
    """


class NumericsWarning(DPBanditsWarning):
    """Numerical trouble: idealised floating-point noise, ill-conditioning, underflow."""


class ExperimentalWarning(DPBanditsWarning):
    """An algorithm or option whose privacy argument is reconstructed rather than published."""
