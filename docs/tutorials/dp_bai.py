"""Tutorial: fixed-budget differentially private best-arm identification (Chen et al., ICLR 2024).

Run ``python docs/tutorials/dp_bai.py [OUT_DIR]``: it prints what the tutorial page shows and writes
``OUT_DIR/dp_bai.png`` (default: the current directory). The docs build runs it, and so does the test
suite, so the page always shows what this code produces.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()

# --8<-- [start:algorithm]
import numpy as np

from dpbandits import DPBAI
from dpbandits.algorithms.bai.schedule import dp_bai_schedule
from dpbandits.envs import dp_bai_instance

env = dp_bai_instance()  # Section 5: K = 30 arms in d = 2, arm 0 is the best
algorithm = DPBAI(env.features, budget=1000, epsilon=0.1)
print(algorithm.privacy)
print(algorithm)  # every estimator shows its parameters (get_params() returns them)

# The phase schedule of Appendix B (K = 10000 arms in d = 16): active-set sizes s_1, ..., s_{M+1}
print(dp_bai_schedule(10_000, 16).sizes)
# --8<-- [end:algorithm]

# --8<-- [start:simulate]
from dpbandits import DPOD

# Vectorised over trials, with seeded NumPy noise: for studies, not for releasing results
dp_bai = algorithm.simulate(env, n_trials=2000, rng=7)
dp_od = DPOD(env.features, budget=1000, epsilon=0.1).simulate(env, n_trials=2000, rng=7)
print(f"success rate at T = 1000, eps = 0.1:  DP-BAI {np.mean(dp_bai.recommended == 0):.3f}"
      f"  DP-OD {np.mean(dp_od.recommended == 0):.3f}")
# --8<-- [end:simulate]

# --8<-- [start:agent]
from dpbandits import Accountant

accountant = Accountant(epsilon_budget=0.25)
agent = algorithm.agent(accountant=accountant)  # secure noise (OpenDP, OS CSPRNG); spends 0.1
feedback = np.random.default_rng(2)  # stands for the real world: Uniform[0, 2 mu] rewards
while not agent.done:
    arm = agent.ask()
    agent.tell(arm, 2 * env.means[arm] * feedback.random())
print("recommended arm:", agent.recommendation)
print("spent:", accountant.spent().epsilon, " remaining:", accountant.remaining().epsilon)
# --8<-- [end:agent]

# --8<-- [start:study]
from dpbandits import Study, plot_run, run_study

study = Study.from_mapping({
    "name": "dp-bai-tutorial", "seed": 1, "trials": 400, "metrics": ["success"],
    "environment": {"name": "dp-bai-section5"},
    "algorithms": [
        {"name": "dp-bai", "label": "DP-BAI"},
        {"name": "dp-od", "label": "DP-OD"},
        {"name": "dp-bai-baseline", "label": "Baseline"},
        {"name": "od-linbai", "label": "OD-LinBAI (non-private)"},
    ],
    "grid": {"budget": [1000], "epsilon": [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]},
})
with tempfile.TemporaryDirectory() as run_dir:
    run_study(study, run_dir, progress="none")
    figure = next(path for path in plot_run(run_dir, formats=["png"]) if path.name == "success_vs_epsilon.png")
    shutil.copy(figure, out_dir / "dp_bai.png")
# --8<-- [end:study]
