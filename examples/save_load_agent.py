"""Save an agent mid-run, load it, and check it continues exactly as the uninterrupted one.

Exact equality needs the same noise, so this demonstration seeds the privacy noise
(insecure_seeded_noise=True: for simulation and tests only; it warns). A deployed agent saves and
loads the same way with its default secure noise, which is never saved.
"""

import tempfile
import warnings
from pathlib import Path

import numpy as np

from dpbandits import DPEBSElimination, InsecureNoiseWarning
from dpbandits.envs.dueling import finite_instance

warnings.simplefilter("ignore", InsecureNoiseWarning)
env = finite_instance("f1")
answers = np.random.default_rng(9).random(4000)  # the users' coins, the same for both runs


def play(agent: DPEBSElimination, rounds: range) -> list[tuple[int, int]]:
    pairs = []
    for t in rounds:
        first, second = agent.ask()
        agent.tell((first, second), winner=first if answers[t] < env.preference_matrix[first, second] else second)
        pairs.append((first, second))
    return pairs


def new_agent() -> DPEBSElimination:
    return DPEBSElimination(n_arms=5, horizon=4000, epsilon=5.0, opponent="without_self", rng=1,
                            insecure_seeded_noise=True)


uninterrupted = new_agent()
reference = play(uninterrupted, range(4000))

interrupted = new_agent()
first_half = play(interrupted, range(2000))
with tempfile.TemporaryDirectory() as directory:
    path = interrupted.save(Path(directory) / "agent.dpb")
    print("saved", path.name, path.stat().st_size, "bytes:", interrupted)
    restored = DPEBSElimination.load(path)
second_half = play(restored, range(2000, 4000))
print("identical continuation:", first_half + second_half == reference)
print("active arms:", restored.active_arms, "==", uninterrupted.active_arms)
