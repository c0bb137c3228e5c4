"""A fitted offline policy deployed as an agent: ``policy.agent(accountant=...)``, as every algorithm.

Every online algorithm takes its budget in one place, ``.agent(accountant=...)``; a fitted offline
policy takes it the same way: ``policy.agent(accountant=ledger)`` returns the policy, and each
release it makes afterwards (each ``sample``, or the one release of a policy that releases its
statistics at ``fit``) records its guarantee in ``ledger`` before anything is drawn. An explicit
``accountant=`` of a ``sample`` call still takes precedence. The accountant is not saved with the
policy: give it again to a loaded one.
"""

from __future__ import annotations

from typing import Self

from dpbandits._core.errors import InvalidParameterError
from dpbandits.privacy.accounting import Accountant

__all__ = ["DeployedPolicy"]


class DeployedPolicy:
    """Mixin of the offline policies: :meth:`agent` keeps an accountant for the releases to come."""

    _agent_accountant: Accountant | None = None

    def agent(self, *, accountant: Accountant | None = None) -> Self:
        """The policy itself, each of its later releases recorded in ``accountant`` before any draw.

        Parameters
        ----------
        accountant : Accountant, optional
            Records every later release (each sample; a statistics release at ``fit``). What the
            accountant would refuse at every release is refused now: a KL policy without a declared
            public domain, a non-private policy (no finite guarantee), a release already made.

        Raises
        ------
        InvalidParameterError
            If ``accountant`` is not an Accountant, or the policy is not private.
        PerInstanceSpendError
            For a KL policy whose public domain is not declared.
        """
        if accountant is not None:
            if not isinstance(accountant, Accountant):
                raise InvalidParameterError(f"accountant must be an Accountant or None; got {accountant!r:.100}")
            self._check_deployment(accountant)
            self._agent_accountant = accountant
        return self

    def _check_deployment(self, accountant: Accountant) -> None:
        """Refuse now what every release would refuse (a subclass adds its own checks)."""

    def _release_accountant(self, given: Accountant | None) -> Accountant | None:
        """The accountant of a release: the call's own, else the one given to :meth:`agent`."""
        return given if given is not None else self._agent_accountant

