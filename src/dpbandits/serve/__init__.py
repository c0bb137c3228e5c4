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
* :mod:`~dpbandits.serve.owners` / :mod:`~dpbandits.serve.affinity` — the server processes on a store,
  each experiment's owner among them, and forwarding its requests there;
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
But an experiment whose requests are *served* by two processes is serialised on the store: each
must read what the other wrote before computing the next tell, and their commits cannot share a
transaction (the group commit of one process). So served (``--no-forward``: each process serves
what it receives), a K = 8 DP-BAI experiment made about 0.4× one process's tells per second with
requests spread per request over 2 processes (PostgreSQL; median 0.36× over four runs before
forwarding, 0.40× in one run with ``--no-forward``), a K = 1000 one about 0.7× (0.68×, 0.77×).

So each experiment has an **owner** process, and the others forward its ``ask``, ``tell`` and
``close`` to it (:mod:`~dpbandits.serve.affinity`): every process — each of ``--workers N``, each
``dpbandits serve`` on the store — listens on an internal address of its own (``--internal-host``,
the loopback interface by default; a port chosen at start) and registers it in the store; the first
process that serves an experiment takes a lease on it (renewed by its heartbeat, expiring by the
database's clock ``--owner-lease-seconds`` after the owner's last one, 5 s by default), and the
owner keeps the agent in memory and group-commits its tells as if it were alone. A forwarded
request costs one loopback HTTP exchange and no read of the store (owners are cached per
process). The key and its ownership of the experiment are checked before forwarding (another key's
experiment answers 404 where it arrived, as a missing id), only registered ``http(s)://host:port``
addresses are used, and a forwarded request is never forwarded again. If the owner dies, requests
are served where they land until its lease expires, then the next process to serve the experiment
takes it over; a request whose owner died after it was forwarded is answered 503
``owner_unavailable`` (it may have been recorded: retry it; a tell retried with its ticket counts
once). Correctness never depends on the lease: processes that both believe they own an experiment
serve it by the catch-up path. Measured with ``benchmarks/bench_serve_scale.py --only spread``
(PostgreSQL, 2 processes, three runs on an otherwise idle 2-core machine): a K = 8 DP-BAI
experiment (16 clients) made 0.88–1.12× (median 0.94×) one process's tells per second with
requests spread per request and 0.93–0.97× with each client on one process, with no 503; a
K = 1000 one (4 clients) 1.06–1.11× (median 1.08×); on a machine busy with other work the lowest of
six runs were 0.69× and 0.97×.

**Recommended deployment**: ``dpbandits serve --workers N`` on one host, or several hosts with
``--internal-host`` set to an address the other hosts reach, behind any load balancer, on
PostgreSQL; requests may land on any process. A load balancer that routes by experiment id
(nginx: a ``map`` of ``$uri`` to the id and ``hash $experiment consistent``; HAProxy: ``balance uri
depth 3``) saves the forwarding hop but is no longer needed for speed. On SQLite, whose write
transaction locks the whole store, more processes mostly add parallel reads and computation; tells
of a contended experiment stay optimistic there (recomputed when another process wrote first).
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
