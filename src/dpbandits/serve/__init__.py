"""``dpbandits serve``: private bandit experiments as a durable, authenticated HTTP service.

Modules, one idea each:

* :mod:`~dpbandits.serve.storage` — tables and engines (SQLite in WAL mode, PostgreSQL by URL);
* :mod:`~dpbandits.serve.auth` — API keys, stored hashed;
* :mod:`~dpbandits.serve.kinds` — the registry of experiment kinds (one entry per agent type);
* :mod:`~dpbandits.serve.params` — each kind's parameters, strict, checked against what can run
  (:mod:`~dpbandits.serve.limits`: noise scales, run and set-up costs, budgets, text fields);
* :mod:`~dpbandits.serve.tickets` — signed tickets linking an ask to its tell;
* :mod:`~dpbandits.serve.locking` — serialising the writers of one experiment, across processes;
* :mod:`~dpbandits.serve.leases` — the steps handed out, leased in the store;
* :mod:`~dpbandits.serve.live` — agents kept in a server process's memory, each valid for one stored version;
* :mod:`~dpbandits.serve.catchup` — loading them, and how a stale one catches up with the store;
* :mod:`~dpbandits.serve.packing` — large stored states, compressed;
* :mod:`~dpbandits.serve.workers` / :mod:`~dpbandits.serve.jobs` — CPU-heavy work in killable child
  processes with a time limit;
* :mod:`~dpbandits.serve.quotas` — per-key limits; :mod:`~dpbandits.serve.store_errors` — which
  store failures a retry can fix (503);
* :mod:`~dpbandits.serve.ledger` — each experiment's privacy ledger (the library's durable ledger);
* :mod:`~dpbandits.serve.service` — the operations, and how clients share an experiment;
* :mod:`~dpbandits.serve.app` — the HTTP routes;
* :mod:`~dpbandits.serve.status_routes` — the status page's routes, :mod:`~dpbandits.serve.sessions`
  its sessions, :mod:`~dpbandits.serve.dashboard` its queries, :mod:`~dpbandits.serve.status_page`
  its HTML and charts.

Start it with ``dpbandits serve --db experiments.db`` after ``dpbandits api-key create``
(``--workers N`` for several server processes on one store). It logs one line with its address,
store and worker processes at start, and one per request with ``-v``. Needs the
``serve`` extra (``pip install "dpbandits[serve]"``).

Deploying several processes
---------------------------
Every process serves every experiment correctly: a request that lands on a process whose agent is
behind the store (another process told since) catches up from the step it holds — replaying the
feedback stored since, or loading the stored state when a newer one was written
(:mod:`~dpbandits.serve.catchup`) — and a ticket is refused only if the stored state refuses it.
An experiment a process finds written by another is *contended* there: its tells catch up before
they are computed and, on PostgreSQL, are computed and written under the experiment's row lock, so
the processes take turns on it instead of computing tells on stale agents whose commits fail. A
DP-BAI agent reloads in a fraction of a second in a process that held it (its plans are kept per
process, keyed by public parameters; a K = 1000 load re-planned for about 7 s before).

Correct is not free, though. One process computes an experiment's tells one after the other in
memory and commits many in one transaction; processes sharing an experiment cannot: each must read
what the other wrote before computing the next tell, and on PostgreSQL each tell holds the row lock
through its own commit. Sharing one experiment between processes therefore serialises it on the
store's round trips and loses the group commit, whatever the catch-up costs: measured with
``benchmarks/bench_serve_scale.py --only spread`` (PostgreSQL, 16 clients, four runs on a shared
2-core machine), a K = 8 DP-BAI experiment made 0.32–0.46× (median 0.36×) one process's tells per
second with requests spread per request over 2 processes and 0.37–0.48× with each client on one of
them, with no 503; a K = 1000 one (4 clients) 0.35–0.85× (median 0.68×; under 0.01× before agents
caught up incrementally and reloaded warm). **Route by experiment**
when the deployment allows it: a load balancer that hashes the experiment id of the path
(``/v1/experiments/{id}/...``, the same for its ask and its tell) to a process — nginx: a ``map`` of
``$uri`` to the id and ``hash $experiment consistent``; HAProxy: ``balance uri depth 3`` — keeps each
experiment's agent in one process's memory, and the processes share the store for durability and
failover. With ``--workers N``, which spreads connections
rather than experiments, keep a client on one connection (HTTP keep-alive) so that its requests stay
on one process, and expect an experiment whose clients land on several processes to run at a
fraction of its speed on one. On SQLite, whose write transaction locks the whole store, tells of a
contended experiment stay optimistic (recomputed when another process wrote first).
"""

from __future__ import annotations

__all__ = ["create_app", "make_engine"]


def __getattr__(name: str) -> object:  # lazy: importing dpbandits.serve loads no web framework
    if name == "create_app":
        from dpbandits.serve.app import create_app

        return create_app
    if name == "make_engine":
        from dpbandits.serve.storage import make_engine

        return make_engine
    raise AttributeError(name)
