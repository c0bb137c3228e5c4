"""The three roles of dpbandits' algorithms, as runtime-checkable protocols.

* An **algorithm** (:class:`Algorithm`) states its guarantee (``privacy``, and ``guarantee(...)``
  with the options it has), makes ask/tell agents (``agent()``) and runs many trials at once
  (``simulate(env, n_trials, rng)``, the vectorised form the study runner uses).
* An **agent** (:class:`Agent`) runs one trial against real feedback: ``ask()`` the next action,
  ``tell(...)`` its feedback, until ``done``; ``recommendation`` names the answer; ``privacy``;
  ``save(path)`` / ``load(path)``; its ``repr`` shows its progress.
* A fitted offline **policy** (:class:`OfflinePolicy`) is ``fit`` on logged data once and
  ``sample`` draws actions; ``privacy`` and ``guarantee(...)`` state what one sample costs.

Best-arm identification algorithms are separate objects that make agents; the dueling algorithms,
Sequential Halving, uniform allocation and the kernel family *are* their own agent (``agent()``
returns the object itself). A non-private comparator states so with a
:class:`~dpbandits.privacy.guarantees.NonPrivate` guarantee.

**Contextual agents** (the kernel family: USCA, its baselines) have the same members, with the
round's context as an argument: ``ask(context)`` returns the action for this round (USCA and the
uniform-sampling baselines play data-independent learning actions and do not read it),
``tell(context, reward)`` records the round, ``done`` once all ``horizon`` learning rounds are told,
and ``recommendation`` is the *released policy*: a function from a context to an action (the
object's ``recommend``). Its privacy is what one release costs: for USCA each evaluation is one
ε-joint-DP draw (k contexts cost k·ε, as ``privacy`` says); for the private feature ridge the model is
released once and every evaluation is post-processing.

Registry entries that read no data (theory curves, ``AlgorithmSpec.is_algorithm`` false) are not
algorithms and have no class. :func:`missing_members` checks an object against a protocol without
evaluating any property (some properties, such as an agent's ``recommendation`` before it is done,
raise by design); ``tests/contract/test_conformance.py`` checks every registered algorithm with it.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dpbandits.privacy.guarantees import Guarantee

__all__ = ["Agent", "Algorithm", "OfflinePolicy", "missing_members"]


@runtime_checkable
class Agent(Protocol):
    """One trial, driven by external feedback (ask/tell)."""

    def ask(self, *args: Any) -> Any:
        """The next action (an arm, a pair of arms; a contextual agent's at ``ask(context)``)."""

    def tell(self, *args: Any, **kwargs: Any) -> None:
        """The feedback of the action last asked (a contextual agent's ``tell(context, reward)``)."""

    @property
    def done(self) -> bool:
        """Whether the trial has ended (its budget or horizon is used up)."""

    @property
    def recommendation(self) -> Any:
        """The answer (once done, for most): an arm; a contextual agent's released policy (context -> action)."""

    @property
    def privacy(self) -> Guarantee:
        """The guarantee of the whole run, with the unit it protects."""

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the agent mid-run; :meth:`load` continues it exactly."""

    @classmethod
    def load(cls, path: str | os.PathLike[str], **overrides: Any) -> Any:
        """Load an agent saved by :meth:`save`."""


@runtime_checkable
class Algorithm(Protocol):
    """An algorithm: its guarantee, its ask/tell agents and its vectorised simulation."""

    @property
    def privacy(self) -> Guarantee:
        """The guarantee (a :class:`~dpbandits.privacy.guarantees.NonPrivate` one if there is none)."""

    def guarantee(self, *args: Any, **kwargs: Any) -> Guarantee:
        """The guarantee with explicit options; with no arguments, :attr:`privacy`."""

    def agent(self, *args: Any, **kwargs: Any) -> Agent:
        """An ask/tell agent that runs this algorithm on one trial."""

    def simulate(self, env: Any, n_trials: int, rng: Any = None, **kwargs: Any) -> Any:
        """Run ``n_trials`` independent trials on ``env`` at once."""


@runtime_checkable
class OfflinePolicy(Protocol):
    """A policy fitted on logged data whose sampled action is the private release."""

    def fit(self, *args: Any, **kwargs: Any) -> Any:
        """Fit on logged data; returns the policy."""

    def sample(self, *args: Any, **kwargs: Any) -> Any:
        """Sample actions."""

    @property
    def privacy(self) -> Guarantee:
        """The guarantee of one sample (with the defaults of :meth:`guarantee`)."""

    def guarantee(self, *args: Any, **kwargs: Any) -> Guarantee:
        """The guarantee of one sample, with explicit options."""


def missing_members(obj: object, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``obj`` lacks, found without evaluating any attribute.

    ``isinstance(obj, protocol)`` also works on Python >= 3.12; on 3.11 it evaluates properties
    (and an agent's ``recommendation`` raises before the agent is done), so prefer this function.

    Parameters
    ----------
    obj : object
    protocol : Agent, Algorithm or OfflinePolicy

    Returns
    -------
    list of str
        Empty when ``obj`` has every member (methods callable).
    """
    missing = []
    for name, member in vars(protocol).items():
        if name.startswith("_"):
            continue
        try:
            found = inspect.getattr_static(obj, name)
        except AttributeError:
            missing.append(name)
            continue
        wants_method = not isinstance(member, property)
        if wants_method and isinstance(found, property):
            missing.append(name)
    return sorted(missing)
