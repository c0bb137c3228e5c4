"""Binding a call's arguments to a signature, with a one-line error that names a mistyped keyword.

Python's own message for ``DPBAI(features, 100, epsilonn=1)`` is "missing a required argument:
'epsilon'" (from :meth:`inspect.Signature.bind`) or "got an unexpected keyword argument 'epsilonn'":
neither says what was meant. :func:`bind_arguments` names the keyword that matches no parameter and
the closest parameter (:func:`difflib.get_close_matches`), as scikit-learn's ``set_params`` and
typer's option parser do.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from dpbandits._core.errors import UnknownParameterError

__all__ = ["bind_arguments", "closest", "unknown_keyword_message"]


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``name`` (difflib's ratio >= 0.6), or None."""
    found = difflib.get_close_matches(name, sorted(set(choices)), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_keyword_message(where: str, name: str, choices: Iterable[str]) -> str:
    """``"DPBAI() got an unknown keyword 'epsilonn'; did you mean 'epsilon'?"`` (or the list of parameters)."""
    choices = [c for c in choices if c != "self"]
    guess = closest(name, choices)
    hint = f"did you mean {guess!r}?" if guess else f"its parameters are {', '.join(choices) or '(none)'}"
    return f"{where} got an unknown keyword argument {name!r}; {hint}"


def bind_arguments(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any],
                   where: str, forwarded: Callable[[], Iterable[str]] | None = None) -> inspect.BoundArguments:
    """``signature.bind(*args, **kwargs)``; a keyword the signature lacks is named with the closest parameter.

    Parameters
    ----------
    signature : inspect.Signature
    args, kwargs
        The call's arguments.
    where : str
        The callable's name in the message (``"DPBAI()"``).
    forwarded : callable, optional
        For a signature with ``**kwargs``: the names it forwards (a subclass's constructor passing
        ``**options`` to its base's); without it, any keyword is accepted there.

    Raises
    ------
    UnknownParameterError
        If a keyword matches no parameter (and the signature takes no ``**kwargs``).
    TypeError
        For any other mismatch (Python's own message).
    """
    parameters = signature.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    if not takes_any or forwarded is not None:
        named = [n for n, p in parameters.items()
                 if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
        if takes_any and forwarded is not None:
            named += [n for n in sorted(forwarded()) if n not in named]
        for key in kwargs:
            if key not in named:
                raise UnknownParameterError(unknown_keyword_message(where, key, named))
    return signature.bind(*args, **kwargs)
