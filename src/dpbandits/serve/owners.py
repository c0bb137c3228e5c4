"""The server processes on one store, and each experiment's advisory owner among them.

Every server process (each of ``--workers N``, each ``dpbandits serve`` on the store) registers a
row in ``processes``: a random id and the address where the other processes reach it, refreshed by a
heartbeat. An experiment's row in ``owners`` names the process its requests are forwarded to
(:mod:`dpbandits.serve.affinity`) until ``expires_at``; the owner renews its leases with every
heartbeat, and a process that finds no owner, or an expired lease, takes it. Times are the
database's clock (:data:`~dpbandits.serve.leases.DB_NOW`), as for the steps' leases, so hosts whose
clocks disagree agree on who owns what.

The lease is **advisory**: it decides where requests go, never whether one is correct. Two processes
that both believe they own an experiment (one paused past its lease while the other took it) serve
it correctly, as any two processes sharing an experiment do (:mod:`dpbandits.serve.catchup`).
An address read from the table is untrusted input: :func:`checked_url` accepts only
``http(s)://host:port``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import Engine, and_, bindparam, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from dpbandits.serve.leases import DB_NOW
from dpbandits.serve.locking import write_transaction
from dpbandits.serve.storage import experiments, owners, processes

__all__ = ["Owner", "Registry", "checked_url"]

_URL = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?):([0-9]{1,5})")
_GONE_AFTER = 3600.0
"""Seconds after its last heartbeat a process's row is deleted (by any other process's heartbeat)."""


def checked_url(url: object) -> str | None:
    """``url`` if it is ``http(s)://host:port`` (no user, path, query or fragment) with a valid port, else None."""
    if not isinstance(url, str) or len(url) > 300:
        return None
    match = _URL.fullmatch(url)
    if match is None or not 0 < int(match.group(2)) < 65536:
        return None
    return url


@dataclass(frozen=True)
class Owner:
    """Who owns an experiment, as one read of the store saw it."""

    tenant: int  # the API key that owns the experiment (the tenant)
    process_id: str | None  # the owner process, None if none holds a lease
    url: str | None  # its address, None if it has none (or an invalid one)
    seconds_left: float  # of its lease, by the database's clock (<= 0: expired)


class Registry:
    """A server process's row in ``processes`` and its owner leases (see the module docstring).

    Parameters
    ----------
    engine : sqlalchemy.Engine
    process_id : str
        This process's id (random).
    url : str
        Where the other processes reach this one (``http://host:port``).
    lease : float
        Seconds an owner lease runs past the owner's latest heartbeat.
    """

    def __init__(self, engine: Engine, process_id: str, url: str, lease: float) -> None:
        self.engine, self.process_id, self.url, self.lease = engine, process_id, url, lease
        now = DB_NOW[engine.dialect.name]
        self._now = now
        self._lookup = (
            select(experiments.c.owner_id, owners.c.process_id, owners.c.expires_at - now, processes.c.url)
            .select_from(experiments.outerjoin(owners, owners.c.experiment_id == experiments.c.id)
                         .outerjoin(processes, processes.c.id == owners.c.process_id))
            .where(experiments.c.id == bindparam("experiment_id")))
        self._take = (update(owners)
                      .where(and_(owners.c.experiment_id == bindparam("taken"),
                                  (owners.c.expires_at <= now) | (owners.c.process_id == process_id)))
                      .values(process_id=process_id, expires_at=now + bindparam("lease_seconds")))

    def register(self) -> None:
        """Add this process's row (and delete the rows of processes silent for an hour)."""
        with write_transaction(self.engine) as connection:
            connection.execute(delete(processes).where(processes.c.seen_at < self._now - _GONE_AFTER))
            connection.execute(insert(processes).values(id=self.process_id, url=self.url, seen_at=self._now))

    def heartbeat(self) -> set[str]:
        """Refresh this process's row and renew its leases; the experiments it still owns."""
        with write_transaction(self.engine) as connection:
            connection.execute(update(processes).where(processes.c.id == self.process_id).values(seen_at=self._now))
            connection.execute(update(owners).where(owners.c.process_id == self.process_id)
                               .values(expires_at=self._now + self.lease))
            return set(connection.execute(select(owners.c.experiment_id)
                                          .where(owners.c.process_id == self.process_id)).scalars())

    def lookup(self, experiment_id: str) -> Owner | None:
        """The experiment's tenant and owner (one read), or None if there is no such experiment."""
        with self.engine.connect() as connection:
            row = connection.execute(self._lookup, {"experiment_id": experiment_id}).first()
        if row is None:
            return None
        tenant, process_id, left, url = row
        return Owner(int(tenant), process_id, checked_url(url), float(left) if left is not None else 0.0)

    def take(self, experiment_id: str, tenant: int) -> Owner:
        """Take the experiment's lease if nobody holds a running one; the owner after (this process or another)."""
        with write_transaction(self.engine) as connection:
            taken = connection.execute(self._take, {"taken": experiment_id, "lease_seconds": self.lease}).rowcount
            if not taken:
                try:
                    with connection.begin_nested():
                        connection.execute(insert(owners).values(experiment_id=experiment_id,
                                                                 process_id=self.process_id,
                                                                 expires_at=self._now + self.lease))
                    taken = 1
                except IntegrityError:  # another process holds a running lease (or took it meanwhile)
                    pass
        if taken:
            return Owner(tenant, self.process_id, self.url, self.lease)
        found = self.lookup(experiment_id)
        return found if found is not None else Owner(tenant, None, None, 0.0)

    def leave(self) -> None:
        """Give up this process's leases and row (a clean shutdown: the others take over at once)."""
        with write_transaction(self.engine) as connection:
            connection.execute(delete(owners).where(owners.c.process_id == self.process_id))
            connection.execute(delete(processes).where(processes.c.id == self.process_id))
