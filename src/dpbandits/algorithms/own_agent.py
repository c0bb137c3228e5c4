"""The algorithms whose object is its own ask/tell agent: the common verbs of :mod:`~.protocols`.

The dueling algorithms and Sequential Halving are built for one trial and driven by ask/tell; their
vectorised simulation is the registered entry point (``simulate_dp_ebs_elimination``...). The mixin
:class:`OwnAgent` gives them the :class:`~dpbandits.algorithms.protocols.Algorithm` verbs: ``agent()``
returns the object itself (``agent(accountant=...)`` records the run's guarantee first, as
``DPBAI(...).agent(accountant=...)`` does), ``simulate(env, n_trials, rng)`` calls the registered
entry point with the object's own parameters and returns a
:class:`~dpbandits.algorithms.results.SimulationResult`, ``guarantee()`` is ``privacy``, ``done`` and
a ``repr`` that shows progress.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, ClassVar, Self

import numpy as np

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import RNGLike
from dpbandits.algorithms.registry import get_algorithm
from dpbandits.algorithms.results import SimulationResult
from dpbandits.privacy.accounting import Accountant, spend
from dpbandits.privacy.guarantees import Guarantee

__all__ = ["OwnAgent", "deprecated_alias"]

_DEPLOYMENT_ONLY = frozenset({"rng", "noise_backend", "insecure_seeded_noise", "record_transcript"})
"""Constructor arguments of a deployed agent only: a simulation draws its own seeded streams."""
_PRIVACY_PARAMS = frozenset({"epsilon", "delta"})
"""Arguments that the non-private twin's simulation (``epsilon = inf``) does not take."""


def _equal(value: Any, default: Any) -> bool:
    try:
        return bool(np.all(value == default)) and type(value) is type(default)
    except (TypeError, ValueError):
        return False


class OwnAgent:
    """Mixin: the object is its own agent; ``simulate`` runs the registered vectorised form.

    A subclass is decorated with :func:`~dpbandits.algorithms.registry.register_algorithm_class`
    (which sets ``registry_name``), has an attribute ``time`` (rounds played) and a constructor
    argument ``horizon``, or overrides ``_progress``.
    """

    registry_name: ClassVar[str]
    non_private_registry_name: ClassVar[str | None] = None
    environment_params: ClassVar[tuple[str, ...]] = ("n_arms", "features")
    """Constructor arguments that must equal the environment's attribute of the same name."""
    deployment_params: ClassVar[tuple[str, ...]] = ()
    """More constructor arguments of a deployed agent only (the simulation does what they ask its own way)."""
    privacy: Any  # a property of the subclass: the Guarantee of the run

    def agent(self, *, accountant: Accountant | None = None) -> Self:
        """Return the object itself: it is its own ask/tell agent (one trial; build another for another).

        Parameters
        ----------
        accountant : Accountant, optional
            Records the run's guarantee (its ``privacy``) now, before the first ``ask`` (so before any
            noise is drawn): a run that would exceed the accountant's budget raises
            :class:`~dpbandits._core.errors.PrivacyBudgetExceededError` and the agent is not started.
            A non-private algorithm has no finite guarantee to record: the accountant refuses it
            (:class:`~dpbandits._core.errors.InvalidParameterError`). This is in addition to a
            constructor's own ``accountant=``, where it has one.
            An algorithm whose every release is charged separately (USCA's recommendations) keeps
            the accountant and records each release in it as it happens.

        Raises
        ------
        InvalidParameterError
            If the agent has already played a round (its releases so far were not recorded), or the
            algorithm is not private.
        """
        if accountant is not None:
            if self._progress()[0] > 0:
                raise InvalidParameterError(
                    f"{type(self).__name__}.agent(accountant=...) must come before the first round; "
                    f"{self._progress()[0]} already played (pass the accountant when the run starts)")
            self._record_run(accountant)
        return self

    def _record_run(self, accountant: Accountant) -> None:
        """Record the whole run's guarantee in ``accountant`` (a subclass with per-release spends overrides it)."""
        spend(accountant, self.privacy, label=f"{type(self).__name__}.agent")

    def guarantee(self) -> Guarantee:
        """The guarantee of the run (``privacy``; this algorithm has no options that change it)."""
        guarantee: Guarantee = self.privacy
        return guarantee

    def _progress(self) -> tuple[int, int]:
        """(steps played, steps in all): rounds played and the horizon."""
        return int(getattr(self, "time")), int(getattr(self, "get_params")()["horizon"])  # noqa: B009

    @property
    def done(self) -> bool:
        """Whether the horizon is reached (``ask`` would raise)."""
        played, total = self._progress()
        return played >= total

    def __repr__(self) -> str:
        played, total = self._progress()
        return f"{super().__repr__()} <{played}/{total} played>"

    def simulate(self, env: Any, n_trials: int, rng: RNGLike = None) -> SimulationResult:
        """Run ``n_trials`` independent trials of this algorithm on ``env`` at once (vectorised).

        Calls the registered simulation entry point with this object's parameters (the study runner
        calls the same function); the arms (``n_arms`` or ``features``) must be the environment's.

        Parameters
        ----------
        env : environment
            An environment of the algorithm's family.
        n_trials : int
        rng : int, SeedSequence, Generator or None
            The simulation's seed (its streams are spawned as the entry point documents).

        Returns
        -------
        SimulationResult
            The registered metrics: a dict of metric name to an array of shape (n_trials,), whose
            keys are also attributes (every algorithm's ``simulate`` returns one).

        Raises
        ------
        InvalidParameterError
            If the arms (or another of :attr:`environment_params`) differ from the environment's, or a parameter of this object has no
            counterpart in the simulation (and is not its default).
        """
        name = self.registry_name
        if self.non_private_registry_name is not None and not self.privacy.is_finite:
            name = self.non_private_registry_name
        spec = get_algorithm(name)
        accepted = inspect.signature(spec.simulate).parameters
        defaults = {key: p.default for key, p in inspect.signature(type(self)).parameters.items()}
        kwargs: dict[str, Any] = {}
        for key, value in getattr(self, "get_params")().items():  # noqa: B009
            if key in _DEPLOYMENT_ONLY or key in self.deployment_params or (
                    key in _PRIVACY_PARAMS and name == self.non_private_registry_name):
                continue
            if key in self.environment_params:
                self._check_environment(env, key, value)
            elif key in accepted:
                kwargs[key] = value
            elif not _equal(value, defaults.get(key, inspect.Parameter.empty)):
                raise InvalidParameterError(f"{type(self).__name__}.simulate cannot run with {key}={value!r}: "
                                            f"{name!r} has no such parameter")
        return SimulationResult(spec.simulate(env, n_trials=n_trials, rng=rng, **kwargs))

    @staticmethod
    def _check_environment(env: Any, key: str, value: Any) -> None:
        theirs: Any = getattr(env, key, None)
        if isinstance(value, np.ndarray | list | tuple):
            same = np.shape(value) == np.shape(theirs) and np.array_equal(np.asarray(value), np.asarray(theirs))
        else:
            same = value == theirs
        if not same:
            raise InvalidParameterError(f"simulate: the environment's {key} must be this algorithm's {key}")


def deprecated_alias(old: str, new: str, value: Any) -> Any:
    """Warn that ``old`` is deprecated in favour of ``new`` (removed in the next release); return ``value``."""
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new}",
                  DeprecationWarning, stacklevel=3)
    return value
