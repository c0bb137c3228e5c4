"""How ``store_0.1.0_5e208c9.sql`` was made: a store of the release before schema versions (commit 5e208c9).

Run with that release's code (``PYTHONPATH=/path/to/5e208c9/src python make_previous_release_store.py
old.db``): it creates the store as ``dpbandits serve --db old.db`` does, an API key, a DP-BAI experiment run
to its end (its ledger holds the run's spend and the recommendation), then the dump is
``"\\n".join(sqlite3.connect("old.db").iterdump())``. Not run by the suite.
"""

import sys

from dpbandits.serve.auth import KeyCache, create_key
from dpbandits.serve.kinds import Feedback
from dpbandits.serve.service import ExperimentService
from dpbandits.serve.storage import make_engine
from dpbandits.serve.testing import feedback_for


def main() -> None:
    engine = make_engine(sys.argv[1])
    _, alice = create_key(engine, "alice")
    owner = int(KeyCache(engine).owner(alice))  # type: ignore[arg-type]
    service = ExperimentService(engine, allow_insecure_seeded_noise=True)
    params = {"n_arms": 3, "budget": 30, "epsilon": 1.0}
    experiment = service.create(owner, "dp-bai", params, name="old", insecure_seed=7)["id"]
    while not service.status(owner, experiment).get("done"):
        handed = service.ask(owner, experiment, lease=10.0)
        action = {k: v for k, v in handed.items() if k in ("arm", "pair")}
        service.tell(owner, experiment, handed["ticket"], Feedback(**feedback_for(handed["step"], action)))
    print(experiment, service.ledger(owner, experiment)["spent"])
    engine.dispose()


if __name__ == "__main__":
    main()
