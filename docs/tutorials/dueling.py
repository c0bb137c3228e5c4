"""Tutorial: differentially private dueling bandits (Saha & Asi 2024).

Run ``python docs/tutorials/dueling.py [OUT_DIR]``: it prints what the tutorial page shows and writes
``OUT_DIR/dueling.png``. The docs build and the test suite both run it.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()

# --8<-- [start:agent]
import numpy as np

from dpbandits import DPEBSElimination
from dpbandits.envs.dueling import finite_instance

env = finite_instance("f1")  # K = 5 arms, utilities 1.0, 0.6, 0.2, -0.2, -0.6: arm 0 is the best
agent = DPEBSElimination(n_arms=5, horizon=2000, epsilon=1.0, opponent="without_self")
print(agent.privacy)

users = np.random.default_rng(3)  # stands for real users answering "which of the two do you prefer?"
for _ in range(2000):
    first, second = agent.ask()
    first_preferred = users.random() < env.preference_matrix[first, second]
    agent.tell((first, second), winner=first if first_preferred else second)
print("rounds:", agent.time, " active arms:", agent.active_arms)
# --8<-- [end:agent]

# --8<-- [start:simulate]
import math

from dpbandits.algorithms.dueling.dp_ebs_elimination import simulate_dp_ebs_elimination

for epsilon in (1.0, 5.0, math.inf):
    metrics = simulate_dp_ebs_elimination(env, n_trials=4, rng=1, horizon=1_000_000, epsilon=epsilon)
    print(f"eps = {epsilon:>4}: regret at T = 1e6 {metrics['reward_regret'].mean():9.0f},"
          f" best arm identified in {metrics['identified_best'].mean():.0%} of trials")
# --8<-- [end:simulate]

# --8<-- [start:study]
from dpbandits import Study, plot_run, run_study

study = Study.from_mapping({
    "name": "dueling-tutorial", "seed": 1, "trials": 4, "chunk_size": 4, "metrics": ["reward_regret"],
    "environment": {"name": "dueling-f1"},
    "algorithms": [
        {"name": "dp-ebs-elimination", "label": "DP-EBS-Elimination"},
        {"name": "ebs-elimination", "label": "EBS-Elimination (non-private)"},
    ],
    "grid": {"epsilon": [1.0, 5.0], "horizon": [1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000]},
})
with tempfile.TemporaryDirectory() as run_dir:
    run_study(study, run_dir, progress="none")
    figure = next(path for path in plot_run(run_dir, formats=["png"])
                  if path.name == "reward_regret_vs_horizon.png")
    shutil.copy(figure, out_dir / "dueling.png")
# --8<-- [end:study]
