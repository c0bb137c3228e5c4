"""Check a privacy claim with the auditors, and catch a mechanism that overstates its guarantee."""

import math

import numpy as np

from dpbandits.audit import audit_exact, epsilon_lower_bound, threshold_events


def randomised_response(keep: float):
    """Exact output distribution of randomised response that keeps the bit with probability `keep`."""
    return lambda bit: [keep, 1 - keep] if bit == 0 else [1 - keep, keep]


claimed = math.log(3)  # keeping the bit with probability 3/4 is ln(3)-DP
print("correct mechanism passes:", audit_exact(randomised_response(0.75), [(0, 1)], epsilon=claimed).passed)
print("broken mechanism (keeps 0.9) caught:",
      not audit_exact(randomised_response(0.9), [(0, 1)], epsilon=claimed).passed)

# Statistical audit from samples: a Laplace mechanism on neighbouring values 0 and 1
rng = np.random.default_rng(0)
epsilon, n = 1.0, 200_000
for label, scale in (("correct scale 1/eps", 1 / epsilon), ("broken scale 1/(4 eps)", 1 / (4 * epsilon))):
    # candidate events {x > t} chosen on a separate calibration draw, never on the audit samples
    calibration = np.r_[rng.laplace(0.0, scale, 2000), 1.0 + rng.laplace(0.0, scale, 2000)]
    events = threshold_events(calibration, 12)
    on_d, on_d_prime = rng.laplace(0.0, scale, n), 1.0 + rng.laplace(0.0, scale, n)
    report = epsilon_lower_bound(on_d, on_d_prime, events, confidence=0.95)
    print(f"{label}: epsilon >= {report.epsilon_lower_bound:.3f} (claim {epsilon}): refuted {report.refutes(epsilon)}")
