"""Real logged bandit data from scikit-learn's bundled classification sets (supervised → bandit).

The classic conversion (Dudík, Langford & Li 2011; Bietti, Agarwal & Langford 2021): every class
is an action, a context is a feature vector, and the reward of action a at context x is
``1[a == label(x)]``. A **stated logging policy** picks the logged action, so the propensities are
known:

* ``"uniform"`` — each of the K classes with probability 1/K;
* ``"noisy-oracle"`` — the true class with probability ``correct_probability``, each other class with
  probability (1 − p)/(K − 1) (a deliberately informative, biased logger).

Features are made public-safe before they reach a private policy: the dataset is split into a
**logged** part (the private data D) and a **public** part; the per-feature standardisation is fitted
on the public part only, and rows are scaled by 1/√p and clipped to norm 1. The action features
are the disjoint (one block per class) map φ(x, a) = e_a ⊗ x̃, of dimension K·p, with ‖φ‖ ≤ 1.
The public part doubles as the evaluation set: :meth:`SupervisedBanditDataset.expected_accuracy`
averages Σ_a π(a|x)·1[a == y] over its contexts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbandits._core.errors import DependencyNotInstalledError, InvalidParameterError
from dpbandits._core.extras import install_advice
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_in_interval, check_one_of
from dpbandits.envs.logged import LoggedContextualData
from dpbandits.envs.registry import register_environment

__all__ = [
    "DATASETS",
    "ClassificationBanditEnvironment",
    "SupervisedBanditDataset",
    "action_features",
    "load_supervised_bandit",
]

DATASETS = ("iris", "wine", "breast_cancer", "digits")
"""scikit-learn's bundled classification sets (no download needed)."""


def _loader(name: str) -> Callable[..., Any]:
    try:
        from sklearn import datasets
    except ImportError as exc:  # pragma: no cover - the "ml" extra is installed in development
        raise DependencyNotInstalledError(
            f"scikit-learn is needed for the bundled datasets; install the 'ml' extra: {install_advice('ml')}"
        ) from exc
    loader: Callable[..., Any] = getattr(datasets, f"load_{name}")
    return loader


def action_features(contexts: FloatArray, n_actions: int) -> FloatArray:
    """Disjoint features φ(x, a) = e_a ⊗ x̃ for every context and action.

    Parameters
    ----------
    contexts : ndarray of shape (m, p)
        Scaled contexts x̃ (norm ≤ 1).
    n_actions : int
        K.

    Returns
    -------
    ndarray of shape (m, K, K·p)
        ``out[i, a]`` is φ(x_i, a): x̃_i in block a, zeros elsewhere.
    """
    m, p = contexts.shape
    out = np.zeros((m, n_actions, n_actions * p))
    for a in range(n_actions):
        out[:, a, a * p:(a + 1) * p] = contexts
    return out


@dataclass(frozen=True)
class SupervisedBanditDataset:
    """A classification set turned into logged linear contextual bandit data.

    Attributes
    ----------
    name : str
    logged : LoggedContextualData
        The private logged data: φ(x_i, a_i) and rewards 1[a_i == y_i].
    logged_actions : ndarray of int
        The logged actions a_i.
    propensities : ndarray
        The logging probabilities of the logged actions.
    public_contexts : ndarray of shape (m, p)
        Scaled public contexts (evaluation set).
    public_labels : ndarray of int
    n_actions : int
        K (number of classes).
    logging : str
        The stated logging policy.
    """

    name: str
    logged: LoggedContextualData
    logged_actions: IntArray
    propensities: FloatArray
    public_contexts: FloatArray
    public_labels: IntArray
    n_actions: int
    logging: str

    def candidate_features(self, context_index: int) -> FloatArray:
        """φ(x, ·) of public context ``context_index`` as a (K, K·p) matrix."""
        return action_features(self.public_contexts[context_index:context_index + 1], self.n_actions)[0]

    def expected_accuracy(self, probabilities: Callable[[FloatArray], FloatArray]) -> float:
        """Average over public contexts of Σ_a π(a|x)·1[a == y].

        Parameters
        ----------
        probabilities : callable
            Maps the candidate features of all public contexts, shape (m, K, K·p), to the policy's
            probabilities over the K actions, shape (m, K).
        """
        features = action_features(self.public_contexts, self.n_actions)
        probs = np.asarray(probabilities(features), dtype=np.float64)
        return float(np.mean(probs[np.arange(probs.shape[0]), self.public_labels]))


def load_supervised_bandit(
    name: str,
    *,
    logging: str = "uniform",
    correct_probability: float = 0.5,
    public_fraction: float = 0.3,
    rng: RNGLike = None,
) -> SupervisedBanditDataset:
    """Load a bundled scikit-learn classification set as logged bandit data.

    Parameters
    ----------
    name : {"iris", "wine", "breast_cancer", "digits"}
    logging : {"uniform", "noisy-oracle"}, default "uniform"
        The stated logging policy (module docstring).
    correct_probability : float, default 0.5
        For ``"noisy-oracle"``: the probability of logging the true class, in [0, 1].
    public_fraction : float, default 0.3
        Fraction of the rows held out as the public split (scaling and evaluation), in (0, 1).
    rng : int, SeedSequence, Generator or None
        Draw order: the split permutation, then the logged actions.

    Returns
    -------
    SupervisedBanditDataset

    Examples
    --------
    >>> from dpbandits.envs.datasets import load_supervised_bandit
    >>> data = load_supervised_bandit("iris", rng=0)
    >>> data.n_actions, data.logged.dimension
    (3, 12)
    """
    check_one_of(name, "name", DATASETS)
    check_one_of(logging, "logging", ("uniform", "noisy-oracle"))
    p_correct = check_in_interval(correct_probability, "correct_probability", 0.0, 1.0)
    frac = check_in_interval(public_fraction, "public_fraction", 0.0, 1.0, closed="neither")
    bunch = _loader(name)()
    x = np.asarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target, dtype=np.int64)
    k = len(bunch.target_names)  # K from the public list of classes, not from the labels seen
    gen = as_generator(rng)
    order = gen.permutation(y.size)
    n_public = max(1, round(frac * y.size))
    if n_public >= y.size:
        raise InvalidParameterError(f"public_fraction leaves no logged rows; got {frac!r} of {y.size} rows")
    public, private = order[:n_public], order[n_public:]
    # standardisation fitted on the public split only, rows scaled by 1/√p and clipped to norm 1
    mean = x[public].mean(axis=0)
    scale = x[public].std(axis=0)
    scale[scale == 0] = 1.0

    def transform(rows: FloatArray) -> FloatArray:
        z = (rows - mean) / scale / np.sqrt(x.shape[1])
        norms = np.linalg.norm(z, axis=1, keepdims=True)
        return np.asarray(z / np.maximum(1.0, norms), dtype=np.float64)

    contexts = transform(x[private])
    labels = y[private]
    if logging == "uniform":
        actions = gen.integers(0, k, size=labels.size)
        propensities = np.full(labels.size, 1.0 / k)
    else:
        correct = gen.random(labels.size) < p_correct
        # a wrong class uniformly among the K − 1 others
        wrong = (labels + gen.integers(1, k, size=labels.size)) % k
        actions = np.where(correct, labels, wrong)
        propensities = np.where(actions == labels, p_correct, (1.0 - p_correct) / (k - 1))
    features = action_features(contexts, k)[np.arange(labels.size), actions]
    rewards = (actions == labels).astype(np.float64)
    return SupervisedBanditDataset(
        name=name,
        logged=LoggedContextualData(features, rewards, 1.0),
        logged_actions=actions.astype(np.int64),
        propensities=np.asarray(propensities, dtype=np.float64),
        public_contexts=transform(x[public]),
        public_labels=y[public],
        n_actions=k,
        logging=logging,
    )


@dataclass(frozen=True)
class ClassificationBanditEnvironment:
    """Study environment: each trial draws a new split and logged actions of one bundled set."""

    dataset: str
    logging: str = "uniform"
    correct_probability: float = 0.5
    public_fraction: float = 0.3

    def draw(self, rng: RNGLike) -> SupervisedBanditDataset:
        """One logged dataset (split, then logged actions, from ``rng``)."""
        return load_supervised_bandit(self.dataset, logging=self.logging,
                                      correct_probability=self.correct_probability,
                                      public_fraction=self.public_fraction, rng=rng)


def _make_classification_bandit(dataset: str, logging: str = "uniform", correct_probability: float = 0.5,
                                public_fraction: float = 0.3) -> ClassificationBanditEnvironment:
    check_one_of(dataset, "dataset", DATASETS)
    check_one_of(logging, "logging", ("uniform", "noisy-oracle"))
    return ClassificationBanditEnvironment(
        dataset, logging, check_in_interval(correct_probability, "correct_probability", 0.0, 1.0),
        check_in_interval(public_fraction, "public_fraction", 0.0, 1.0, closed="neither"),
    )


register_environment(
    "sklearn-classification",
    kind="offline",
    factory=_make_classification_bandit,
    description="scikit-learn bundled classification set as logged contextual bandit data; params: dataset",
)
