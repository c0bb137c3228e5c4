"""Binary-tree continual counting (the Binary Mechanism of Chan, Shi & Song 2011).

A continual counter receives a stream v_1, …, v_T and releases, at every step t, a noisy prefix sum
c_t ≈ Σ_{s≤t} v_s. The binary mechanism keeps one noisy partial sum ("p-sum") per dyadic interval
(node) and releases c_t as the sum of the p-sums of the ≤ L = ⌊log₂T⌋ + 1 nodes that tile (0, t].

Node indexing used throughout this module: the node that *ends* at time t has level j = lowest set
bit of t and covers (t − 2^j, t]. Exactly one node completes per step, so the node noise is a
sequence η_1, …, η_T (η_t is the noise of the node ending at t), drawn one value per step in time
order. The release is

    c_t = Σ_{s≤t} v_s + e_t,    e_t = η_t + e_{t & (t−1)},    e_0 = 0,

(the "lazy-noise" form), which has exactly the distribution of
the α/α̂ formulation of CSS Algorithm 2: a noisy p-sum is the true p-sum plus one independent
Laplace per node, and the release is the sum of the noisy p-sums of the nodes in t's binary
decomposition.

Three forms share this noise convention and therefore agree exactly given the same node noise:

* :class:`BinaryTreeCounter` — streaming: ``update(v)`` returns c_t (ask/tell deployment);
* :func:`binary_tree_prefix_sums` — all T releases of many independent streams at once;
* :class:`TreeNoiseTable` — the error sequences e_t of many counters, drawn lazily by chunks of
  time, for vectorised simulations that need random access to a window of rounds.

Privacy
-------
Changing one stream element by at most Δ (``sensitivity``) changes at most L p-sums, each by at
most Δ, so the L1 sensitivity of the vector of p-sums is L·Δ and Laplace noise of scale
b = L·Δ/ε per node makes the whole release sequence ε-DP (pure). This holds for adaptively chosen
streams because the node noise is independent of the data. A change of k elements costs kε
(group privacy).

References
----------
T.-H. H. Chan, E. Shi, D. Song, "Private and continual release of statistics", ACM TISSEC 2011,
Algorithm 2 and Theorem 3.5 (Binary Mechanism), Corollary 2.9 (sum of Laplace variables).
C. Dwork, M. Naor, T. Pitassi, G. N. Rothblum, "Differential privacy under continual observation",
STOC 2010, Theorem 4.1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import InvalidParameterError, PrivacyBudgetExceededError
from dpbandits._core.persistence import Persistable
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import RNGLike
from dpbandits._core.schema import Array, Int, ListOf, Nested, Noise, StateSchema, Tuple, rule
from dpbandits._core.validation import (
    check_array,
    check_epsilon,
    check_finite_float,
    check_int,
    check_sensitivity,
)
from dpbandits.privacy._tree_arithmetic import REFERENCE as REFERENCE
from dpbandits.privacy._tree_arithmetic import (
    binary_tree_error_bound,
    binary_tree_guarantee,
    binary_tree_node_scale,
    decomposition_nodes,
    tree_levels,
)
from dpbandits.privacy._tree_batch import TreeNoiseTable, binary_tree_prefix_sums
from dpbandits.privacy.accounting import Accountant, spend
from dpbandits.privacy.guarantees import PureDP
from dpbandits.privacy.noise import (
    NoiseAdder,
    NoiseBackend,
    NumpyNoise,
    discrete_laplace_from_uniforms,
    privacy_noise,
)

__all__ = [
    "BinaryTreeCounter",
    "BinaryTreeCounterBank",
    "TreeNoiseTable",
    "binary_tree_error_bound",
    "binary_tree_guarantee",
    "binary_tree_node_scale",
    "binary_tree_prefix_sums",
    "decomposition_nodes",
    "tree_levels",
]

_READ_AHEAD = 256
"""Node-noise values a bank reads ahead from each per-counter seeded stream (one draw per block)."""


def _check_integral(values: NDArray[Any], name: str) -> NDArray[np.int64]:
    """Integer stream elements as int64 (an integer counter refuses fractions and non-finite values)."""
    if values.dtype.kind in "iub":
        return values.astype(np.int64, copy=False)
    if not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
        raise InvalidParameterError(
            f"{name} must be integers for an integer counter (integer=True); got {values.tolist()!r}"
        )
    return values.astype(np.int64)


def _counter_noise(
    n_counters: int,
    rng: RNGLike,
    backend: NoiseBackend | Sequence[NoiseBackend] | None,
    insecure_seeded_noise: bool,
) -> NoiseBackend | list[NoiseBackend]:
    """The node-noise source of a bank: one backend for all counters, or one per counter."""
    if backend is None or isinstance(backend, NoiseBackend):
        return privacy_noise(rng, insecure_seeded_noise=insecure_seeded_noise, backend=backend, stacklevel=4)
    backends = list(backend)
    if len(backends) != n_counters or not all(isinstance(b, NoiseBackend) for b in backends):
        raise InvalidParameterError(
            f"backend must be a NoiseBackend or a sequence of {n_counters} NoiseBackends (one per counter)"
        )
    if rng is not None:
        raise InvalidParameterError(f"pass either rng or backends, not both; got rng={rng!r}")
    seeded = [b for b in backends if b.seeded]
    if seeded:  # the gate refuses (or warns about) seeded noise once for the whole bank
        privacy_noise(insecure_seeded_noise=insecure_seeded_noise, backend=seeded[0], stacklevel=4)
    return backends


def _bank_dtype(bank: BinaryTreeCounterBank) -> str:
    return "int64" if bank.integer else "float64"


def _node_ends(time: int) -> list[int]:
    """End times of the nodes held after ``time`` updates: 0, then the prefixes of time's binary decomposition."""
    ends, end = [0], 0
    for bit in reversed(range(time.bit_length())):
        if time >> bit & 1:
            end += 1 << bit
            ends.append(end)
    return ends


class BinaryTreeCounterBank(Persistable):
    """Several binary-tree counters that receive their stream elements at the same times.

    ``update(values)`` feeds one element to every live counter and returns every counter's noisy
    prefix sum. A counter can be retired (:meth:`retire`): it then receives nothing more, draws no
    more noise, and keeps its last release. Each counter is an independent binary mechanism.

    Releases are floating-point safe by construction, whatever the noise backend:

    * ``integer=True`` (integer streams such as win counts): each node's p-sum (an integer) gets
      exact discrete-Laplace noise through :meth:`~dpbandits.privacy.noise.NoiseBackend.add_discrete_laplace`
      and the releases are exact integer sums of noisy p-sums — nothing for a float attack to read;
    * ``integer=False`` (real streams): each node's p-sum is released through
      :meth:`~dpbandits.privacy.noise.NoiseBackend.add_laplace` (inside OpenDP on the secure
      backend) and the release is the sum of the noisy p-sums of t's decomposition (post-processing).

    Parameters
    ----------
    n_counters : int
        K >= 1.
    horizon : int
        T >= 1, the most elements a counter may receive (sets L = ⌊log₂T⌋ + 1).
    epsilon : float
        ε > 0 per counter, or ``inf`` for exact counters (no noise is drawn).
    sensitivity : float, default 1.0
        Δ: the most one stream element changes between neighbouring streams (an integer when
        ``integer``).
    integer : bool, default False
        Stream elements are integers (checked); node noise is discrete Laplace.
    rng : int, SeedSequence, Generator or None
        Seed of the node noise; only with ``insecure_seeded_noise=True``.
    backend : NoiseBackend or sequence of NoiseBackend, optional
        Source of node noise; default the secure OpenDP backend (one call per update for all live
        counters). A sequence gives each counter its own stream (reproducible simulations match
        :class:`TreeNoiseTable` bit for bit); seeded backends need ``insecure_seeded_noise=True``.
    insecure_seeded_noise : bool, default False
        Allow seeded NumPy noise (simulation only; warns).

    Privacy
    -------
    Per counter: discrete or continuous Laplace(L·Δ/ε) per node, ε-DP for the whole release
    sequence under a change of one element by at most Δ, also against adaptively chosen streams
    (the node noise is independent of the data). Retiring a counter is post-processing.

    References
    ----------
    Chan, Shi & Song (2011), Algorithm 2 and Theorem 3.5; Canonne, Kamath & Steinke (2020) for
    the discrete Laplace mechanism.

    Examples
    --------
    >>> from dpbandits.privacy.counters import BinaryTreeCounterBank
    >>> bank = BinaryTreeCounterBank(2, horizon=8, epsilon=float("inf"), integer=True)
    >>> bank.update([1, 0]).tolist(), bank.update([1, 1]).tolist()
    ([1, 0], [2, 1])
    """

    _schema = StateSchema(
        time=Int(0, "horizon"),
        _live=Array("bool", ("n_counters",)),
        _nodes=ListOf(Tuple(Int(0, "horizon"), Array(_bank_dtype, ("n_counters",)), Array(_bank_dtype, ("n_counters",))),
                      min_length=1, max_length=lambda bank: bank.levels + 1),
        _released=Array(_bank_dtype, ("n_counters",)),
        _noise=Noise("_noise"),
        _read_ahead=Array(_bank_dtype, ("n_counters", None)),
        _cursor=Int(0, _READ_AHEAD),
        rules=[rule("the nodes end at the binary decomposition of time, from (0, 0, 0)",
                    lambda bank, s: [n[0] for n in s["_nodes"]] == _node_ends(s["time"])
                    and not s["_nodes"][0][1].any() and not s["_nodes"][0][2].any()),
               rule("_cursor <= the read-ahead width <= _READ_AHEAD",
                    lambda bank, s: s["_cursor"] <= s["_read_ahead"].shape[1] <= _READ_AHEAD),
               rule("_released of a live counter is the noisy prefix of the last node (a retired one keeps its last)",
                    lambda bank, s: np.array_equal(s["_released"][s["_live"]], s["_nodes"][-1][2][s["_live"]]))],
        derived=("_live_index",),
    )

    def __init__(
        self,
        n_counters: int,
        horizon: int,
        epsilon: float,
        sensitivity: float = 1.0,
        *,
        integer: bool = False,
        rng: RNGLike = None,
        backend: NoiseBackend | Sequence[NoiseBackend] | None = None,
        insecure_seeded_noise: bool = False,
    ) -> None:
        self.n_counters = check_int(n_counters, "n_counters", minimum=1)
        check_fits("n_counters", self.n_counters, 32.0 * min(self.n_counters, 10**30),
                   what="the counters' releases, live flags and a tree node (int64 or float64 each)")
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.epsilon = check_epsilon(epsilon, allow_inf=True)
        self.sensitivity = check_sensitivity(sensitivity)
        self.integer = bool(integer)
        if self.integer and self.sensitivity != round(self.sensitivity):
            raise InvalidParameterError(
                f"sensitivity must be an integer for an integer counter; got {self.sensitivity!r}"
            )
        self.levels = tree_levels(self.horizon)
        self.scale = binary_tree_node_scale(self.horizon, self.epsilon, self.sensitivity)
        self._noise = _counter_noise(self.n_counters, rng, backend, insecure_seeded_noise)
        self.time = 0
        self._dtype = np.int64 if self.integer else np.float64
        self._live = np.ones(self.n_counters, dtype=bool)
        self._live_index = np.arange(self.n_counters)
        zeros = np.zeros(self.n_counters, dtype=self._dtype)
        # (end time, exact p-sum of the node, noisy prefix = Σ noisy p-sums of the decomposition)
        self._nodes: list[tuple[int, NDArray[Any], NDArray[Any]]] = [(0, zeros, zeros)]
        self._released = zeros.copy()
        # node noise read ahead from per-counter NumPy streams: (n_counters, ≤ _READ_AHEAD), next column _cursor
        self._read_ahead = np.zeros((self.n_counters, 0), dtype=self._dtype)
        self._cursor = 0
        self._configure_noise()

    def _configure_noise(self) -> None:
        """Bind the node-noise source to the (once-validated) scale.

        One backend: a prepared release verb (:meth:`~dpbandits.privacy.noise.NoiseBackend.adder`),
        so each update is one call for all live counters (one OpenDP call on the secure backend).
        One seeded NumPy stream per counter: each stream is read ahead by blocks of
        ``_READ_AHEAD`` node values (the same numbers, in the same order, as one value per update),
        so each update takes one column for all live counters. Other per-counter backends (or
        NumPy backends sharing a Generator): one prepared verb per counter, in counter order.
        """
        kind = "discrete_laplace" if self.integer else "laplace"
        self._add: NoiseAdder | None = None
        self._adders: list[NoiseAdder] | None = None
        self._streams: list[np.random.Generator] | None = None
        if self.scale == 0.0:
            return
        if isinstance(self._noise, NoiseBackend):
            self._add = self._noise.adder(kind, self.scale)
        elif (all(type(b) is NumpyNoise for b in self._noise)
              and len({id(cast(NumpyNoise, b).rng) for b in self._noise}) == len(self._noise)):
            # distinct streams only: reading one ahead then leaves the others' numbers unchanged
            self._streams = [cast(NumpyNoise, b).rng for b in self._noise]
        else:
            self._adders = [b.adder(kind, self.scale) for b in self._noise]

    def _set_state(self, state: dict[str, Any]) -> None:
        super()._set_state(state)
        self._live_index = np.flatnonzero(self._live)
        self._configure_noise()  # the restored backends (their streams) replace the constructed ones

    @property
    def privacy(self) -> PureDP:
        """The guarantee of each counter."""
        return binary_tree_guarantee(self.epsilon, self.sensitivity)

    @property
    def live(self) -> NDArray[np.bool_]:
        """Which counters still receive elements."""
        return self._live.copy()

    def retire(self, counters: int | Sequence[int] | NDArray[np.int64]) -> None:
        """Stop feeding (and drawing noise for) ``counters``; they keep their last release."""
        index = np.atleast_1d(np.asarray(counters))
        if index.dtype.kind not in "iu" or np.any(index < 0) or np.any(index >= self.n_counters):
            raise InvalidParameterError(
                f"counters must be indices in [0, {self.n_counters}); got {np.asarray(counters).tolist()!r}"
            )
        self._live[index] = False
        self._live_index = np.flatnonzero(self._live)

    def _read_streams_ahead(self) -> None:
        """Draw the next block of node noise of every live counter from its own stream, in time order."""
        assert self._streams is not None
        size = min(_READ_AHEAD, self.horizon - self.time + 1)  # node values of times t..T (t = self.time)
        block = np.zeros((self.n_counters, size), dtype=self._dtype)
        for k in self._live_index.tolist():  # one draw per counter per block (not per update)
            stream = self._streams[k]
            block[k] = (discrete_laplace_from_uniforms(stream.random((size, 2)), self.scale) if self.integer
                        else stream.laplace(0.0, self.scale, size=size))
        self._read_ahead, self._cursor = block, 0

    def _noisy(self, psums: NDArray[Any]) -> NDArray[Any]:
        """Noisy p-sums of the live counters (exact when the scale is 0)."""
        if self._add is not None:
            return self._add(psums)
        if self._streams is not None:
            if self._cursor == self._read_ahead.shape[1]:
                self._read_streams_ahead()
            column = self._read_ahead[:, self._cursor]
            self._cursor += 1
            return psums + (column if psums.size == self.n_counters else column[self._live_index])
        if self._adders is not None:
            out = np.empty_like(psums)
            for slot, k in enumerate(self._live_index.tolist()):  # per-counter non-NumPy streams
                out[slot] = self._adders[k](psums[slot : slot + 1])[0]
            return out
        return psums

    def update(self, values: ArrayLike) -> NDArray[Any]:
        """Feed one element to every live counter; return every counter's release c_t.

        Parameters
        ----------
        values : array_like of shape (n_counters,)
            The elements; entries of retired counters are ignored.

        Returns
        -------
        ndarray of shape (n_counters,)
            int64 for an integer bank, float64 otherwise (a copy).

        Raises
        ------
        PrivacyBudgetExceededError
            If the counters already released ``horizon`` values.
        InvalidParameterError
            If ``values`` has the wrong shape, is not finite, or is fractional for an integer bank.
        """
        v = np.asarray(values)
        if v.shape != (self.n_counters,):
            v = check_array(values, "values", ndim=1)
            raise InvalidParameterError(f"values must have shape ({self.n_counters},); got {v.shape}")
        all_live = self._live_index.size == self.n_counters
        if not all_live:
            v = v[self._live_index]
        if self.integer:
            v = v.astype(np.int64) if v.dtype.kind in "iu" else _check_integral(v, "values")
        else:
            v = v.astype(np.float64)
            if not np.isfinite(v).all():
                raise InvalidParameterError(f"values must be finite; got {v.tolist()!r}")
        if self.time >= self.horizon:
            raise PrivacyBudgetExceededError(
                f"counter already released horizon={self.horizon} values; update number "
                f"{self.time + 1} is not covered by its guarantee"
            )
        self.time += 1
        t = self.time
        parent = t & (t - 1)
        nodes = self._nodes
        psum = v  # a fresh array (astype copies)
        if all_live:
            while nodes[-1][0] > parent:  # the popped nodes tile (parent, t − 1]
                psum += nodes.pop()[1]
            # node (parent, t]: exact p-sum, released noisily; c_t = noisy prefix of the parent + it
            noisy_prefix = nodes[-1][2] + self._noisy(psum)
            nodes.append((t, psum, noisy_prefix))
            self._released = noisy_prefix  # never modified in place: a later update builds a new array
            return noisy_prefix.copy()
        live = self._live_index
        while nodes[-1][0] > parent:
            psum += nodes.pop()[1][live]
        noisy_prefix = nodes[-1][2].copy()
        noisy_prefix[live] += self._noisy(psum)
        exact = np.zeros(self.n_counters, dtype=self._dtype)
        exact[live] = psum
        nodes.append((t, exact, noisy_prefix))
        released = self._released.copy()  # retired counters keep their last release
        released[live] = noisy_prefix[live]
        self._released = released
        return released.copy()


class BinaryTreeCounter(Persistable):
    """Streaming binary-tree counter: ``update(v)`` feeds one element and returns the noisy prefix sum.

    A :class:`BinaryTreeCounterBank` of one counter: secure OpenDP noise by default, exact discrete
    Laplace on integer streams (``integer=True``), noisy p-sums released inside OpenDP otherwise.

    Parameters
    ----------
    horizon : int
        T >= 1, the most elements the counter may receive (sets L = ⌊log₂T⌋ + 1).
    epsilon : float
        ε > 0, or ``inf`` for an exact counter (the non-private twin; no noise is drawn).
    sensitivity : float, default 1.0
        Δ: the most one stream element changes between neighbouring streams. Elements themselves
        may be any finite real (for example a large subtraction), or any integer when ``integer``.
    integer : bool, default False
        Integer stream and exact integer (discrete Laplace) noise.
    rng : int, SeedSequence, Generator or None
        Seed of the node noise; only with ``insecure_seeded_noise=True``.
    backend : NoiseBackend, optional
        Source of node noise (default: secure OpenDP noise).
    insecure_seeded_noise : bool, default False
        Allow seeded NumPy noise (simulation only; warns).
    accountant : Accountant, optional
        Records the counter's guarantee (:attr:`privacy`: its whole release sequence) before the
        counter exists and before any noise is drawn; a counter that would exceed the budget is
        refused. Loading a saved counter under a ledger that does not hold this charge for its
        lineage spends it there (:meth:`~dpbandits._core.persistence.Persistable.load`).

    Attributes
    ----------
    privacy : PureDP
        ε-DP for one stream element changed by at most Δ.
    time : int
        Number of elements received so far.

    Privacy
    -------
    Binary mechanism with Laplace(L·Δ/ε) noise per node (discrete Laplace for integer streams):
    ε-DP for the whole release sequence under a change of one element by at most Δ, also against
    adaptively chosen streams.

    References
    ----------
    Chan, Shi & Song (2011), Algorithm 2 and Theorem 3.5.

    Examples
    --------
    >>> from dpbandits.privacy.counters import BinaryTreeCounter
    >>> counter = BinaryTreeCounter(8, float("inf"))
    >>> [counter.update(v) for v in (1, 0, 1)]
    [1.0, 1.0, 2.0]
    """

    _schema = StateSchema(_bank=Nested("_bank"))
    _charges_run = True  # the release sequence's guarantee is spent when built, and when loaded under another ledger

    def __init__(
        self,
        horizon: int,
        epsilon: float,
        sensitivity: float = 1.0,
        *,
        integer: bool = False,
        rng: RNGLike = None,
        backend: NoiseBackend | None = None,
        insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> None:
        if backend is not None and not isinstance(backend, NoiseBackend):
            raise InvalidParameterError(f"backend must be a NoiseBackend or None; got {type(backend).__name__}")
        self._bank = BinaryTreeCounterBank(
            1, horizon, epsilon, sensitivity, integer=integer, rng=rng, backend=backend,
            insecure_seeded_noise=insecure_seeded_noise,
        )
        if math.isfinite(self._bank.epsilon):  # the whole release sequence, before any noise is drawn
            spend(accountant, self._bank.privacy, label="BinaryTreeCounter", lineage=self.lineage)
        self.horizon, self.epsilon, self.sensitivity = self._bank.horizon, self._bank.epsilon, self._bank.sensitivity
        self.levels, self.scale, self.integer = self._bank.levels, self._bank.scale, self._bank.integer

    @property
    def time(self) -> int:
        """Number of elements received so far."""
        return self._bank.time

    def _run_finished(self) -> bool:
        return self._bank.time >= self._bank.horizon

    @property
    def privacy(self) -> PureDP:
        """The guarantee of this counter."""
        return self._bank.privacy

    def update(self, value: float) -> float | int:
        """Feed the next stream element and return the noisy prefix sum c_t (an int when ``integer``).

        Raises
        ------
        PrivacyBudgetExceededError
            If the counter already released ``horizon`` values.
        InvalidParameterError
            If ``value`` is not a finite real (an integer when ``integer``).
        """
        if self.integer:
            if isinstance(value, bool) or not isinstance(value, int | np.integer | float | np.floating):
                raise InvalidParameterError(f"value must be an integer; got {value!r}")
            released = self._bank.update(np.array([value]))
            return int(released[0])
        v = check_finite_float(value, "value")
        return float(self._bank.update(np.array([v]))[0])
