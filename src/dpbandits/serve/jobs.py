"""The CPU-heavy jobs of the service, run in child processes by :mod:`dpbandits.serve.workers`.

Each takes an experiment's kind, validated parameters (JSON) and its agent (the stored state, or the
server's agent pickled, which spares the child the cost of rebuilding it), and returns what the
server process stores and keeps: the new state bytes and the agent itself (pickled: rebuilding an
agent from its state can cost seconds, unpickling it a fraction of that), or ``None`` for the agent
when it cannot be pickled (the server then loads it from the state bytes itself).
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from dpbandits.privacy.guarantees import Guarantee
from dpbandits.serve.kinds import get_kind

__all__ = ["apply_job", "build_job", "load_job", "portable", "sample_job", "upload_job"]


def _pickled(agent: Any) -> bytes | None:
    try:
        return pickle.dumps(agent, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # an agent holding an object pickle cannot copy: the server loads the state instead
        return None


def build_job(kind_name: str, params_json: str, seed: int | None) -> dict[str, Any]:
    """Build a new agent: its state, the agent, its summary, its run's guarantee and one release's guarantee."""
    kind = get_kind(kind_name)
    params = kind.params.model_validate_json(params_json)
    agent = kind.build(params, seed)
    guarantee: Guarantee | None = kind.family.guarantee(agent) if kind.family.run_event else None
    return {"state": agent.to_bytes(), "agent": _pickled(agent), "summary": kind.family.summary(agent),
            "guarantee": guarantee, "release_guarantee": kind.family.release_guarantee(agent, params)}


def load_job(kind_name: str, params_json: str, state: bytes) -> bytes | None:
    """The agent stored as ``state``, pickled (None if it cannot be)."""
    kind = get_kind(kind_name)
    return _pickled(kind.load(kind.params.model_validate_json(params_json), state))


def portable(agent: Any) -> bytes | tuple[bytes]:
    """The agent as a job takes it: ``(pickled,)``, or its state bytes if it cannot be pickled."""
    pickled = _pickled(agent)
    return bytes(agent.to_bytes()) if pickled is None else (pickled,)


def _agent(kind_name: str, params_json: str, stored: bytes | tuple[bytes]) -> Any:
    """The agent from its state bytes, or from ``(pickled,)``: the server's agent itself, pickled."""
    if isinstance(stored, tuple):
        return pickle.loads(stored[0])  # the server process's own agent
    kind = get_kind(kind_name)
    return kind.load(kind.params.model_validate_json(params_json), stored)


def apply_job(kind_name: str, params_json: str, stored: bytes | tuple[bytes],
              steps: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """Feed the agent the ``(action, payload)`` of consecutive steps; its new state, the agent and its summary."""
    kind = get_kind(kind_name)
    agent = _agent(kind_name, params_json, stored)
    for action, payload in steps:
        kind.family.apply(agent, action, payload)
    return {"state": agent.to_bytes(), "agent": _pickled(agent), "summary": kind.family.summary(agent)}


def sample_job(kind_name: str, params_json: str, stored: bytes | tuple[bytes], size: int,
               context: list[float] | None, seed: Any) -> dict[str, Any]:
    """Draw ``size`` samples from the agent; the samples, the new state and the agent."""
    kind = get_kind(kind_name)
    agent = _agent(kind_name, params_json, stored)
    samples = kind.family.sample(agent, size, context, seed)
    return {"samples": samples, "state": agent.to_bytes(), "agent": _pickled(agent)}


def upload_job(kind_name: str, params_json: str, stored: bytes | tuple[bytes], path: str,
               options: dict[str, Any]) -> dict[str, Any]:
    """Parse the uploaded file at ``path`` and fit the policy to it, once."""
    kind = get_kind(kind_name)
    family: Any = kind.family
    params = kind.params.model_validate_json(params_json)
    agent = _agent(kind_name, params_json, stored)
    try:
        statistics = family.read_upload(params, path, **options)
    except Exception as exc:  # the message must not carry the server's temporary path
        _without_path(exc, path)
        raise
    family.fit(agent, statistics)
    return {"state": agent.to_bytes(), "agent": _pickled(agent), "summary": family.summary(agent),
            "guarantee": family.guarantee(agent)}


def _without_path(exc: Exception, path: str) -> None:
    """Replace the temporary file's path (and its directory) in ``exc``'s message by "the uploaded file"."""
    directory = str(Path(path).parent)
    exc.args = tuple(arg.replace(path, "the uploaded file").replace(directory, "<upload>")
                     if isinstance(arg, str) else arg for arg in exc.args)
