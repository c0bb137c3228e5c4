"""The catalogue commands: ``list`` (what is registered), ``show NAME`` and ``init-study NAME``.

``list`` and ``show`` print rich tables on a terminal and JSON with ``--json`` (for scripts).
Names are never cut: a name column is as wide as its longest name, and the other columns wrap.
``init-study`` copies a bundled study to a TOML file to edit and ``dpbandits run``.

Like every ``cli_*`` module, this one imports typer and the standard library only at its top
level (see :mod:`dpbandits.cli`).
"""

from __future__ import annotations

import difflib
import inspect
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from dpbandits._core.errors import InvalidParameterError

__all__ = ["catalogue", "describe", "plain_text", "register"]

DEFAULT_TEMPLATE = "quickstart"
"""The study ``init-study`` copies without a name: a private one (DP-BAI, ε-DP, at five ε)."""

# Parameters of a simulation entry point / environment factory that a study does not set.
_SUPPLIED_BY_RUNNER = frozenset({"env", "n_trials", "rng"})


def catalogue() -> dict[str, list[dict[str, Any]]]:
    """Every registered environment and algorithm and every bundled study, as plain data."""
    from dpbandits.algorithms.registry import list_algorithms
    from dpbandits.envs.registry import list_environments
    from dpbandits.experiments.bundled import list_bundled_studies

    return {
        "environments": [
            {"name": env.name, "kind": env.kind, "description": env.description} for env in list_environments()
        ],
        "algorithms": [
            {"name": spec.name, "family": spec.family, "privacy": spec.privacy, "metrics": list(spec.metrics),
             "environments": list(spec.environments), "description": spec.description}
            for spec in list_algorithms()
        ],
        "studies": [{"name": study.name, "description": study.description} for study in list_bundled_studies()],
    }


_ROLE = re.compile(r":(?:[a-z]+:)*[a-z]+:`~?([^`<]*?)(?:\s*<([^`>]*)>)?`")
_LITERAL = re.compile(r"``(.+?)``")


def plain_text(docstring: str) -> str:
    """A docstring's reST as plain text: cross-references as their names, literals without quotes.

    ``:class:`~a.b.C``` gives ``C`` (``~``: the last dotted part), ``:func:`title <target>``` gives
    ``title``, a double-backquoted literal its text, and a doubled backslash one backslash.
    """

    def reference(match: re.Match[str]) -> str:
        whole, title = match.group(0), match.group(1).strip()
        if match.group(2) is not None:
            return title or match.group(2)
        return title.rsplit(".", 1)[-1] if "`~" in whole else title

    return _LITERAL.sub(r"\1", _ROLE.sub(reference, docstring)).replace("\\\\", "\\")


def _parameters(function: Any) -> list[dict[str, Any]]:
    """The keyword parameters a study sets: name, whether required, and the default (as JSON)."""
    found = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name in _SUPPLIED_BY_RUNNER or parameter.kind in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
            continue
        entry: dict[str, Any] = {"name": parameter.name, "required": parameter.default is parameter.empty}
        if parameter.default is not parameter.empty:
            default = parameter.default
            entry["default"] = default if isinstance(default, (bool, int, float, str, type(None))) else repr(default)
        found.append(entry)
    return found


def describe(name: str) -> list[dict[str, Any]]:
    """Everything registered or bundled under ``name``: one description per match.

    Raises
    ------
    InvalidParameterError
        If nothing has that name (the message suggests close names).
    """
    from dpbandits.algorithms.registry import is_user_algorithm, list_algorithms
    from dpbandits.envs.registry import list_environments
    from dpbandits.experiments.bundled import bundled_study_text, list_bundled_studies

    found: list[dict[str, Any]] = []
    for spec in list_algorithms():
        if spec.name == name:
            found.append({
                "type": "algorithm", "name": spec.name, "family": spec.family, "privacy": spec.privacy,
                "class": _class_name(spec.algorithm_class), "is_algorithm": spec.is_algorithm,
                "environments": list(spec.environments), "metrics": list(spec.metrics),
                "proportion_metrics": list(spec.proportion_metrics), "parameters": _parameters(spec.simulate),
                "documentation": plain_text(inspect.getdoc(spec.simulate) or spec.description),
            })
    for env in list_environments():
        if env.name == name:
            found.append({
                "type": "environment", "name": env.name, "kind": env.kind, "description": env.description,
                "parameters": _parameters(env.factory), "documentation": plain_text(inspect.getdoc(env.factory) or ""),
            })
    for study in list_bundled_studies():
        if study.name == name:
            found.append({"type": "study", "name": study.name, "description": study.description,
                          "toml": bundled_study_text(name)})
    if not found and is_user_algorithm(name):
        found.append(_describe_user_algorithm(name))
    if not found:
        known = [entry["name"] for group in catalogue().values() for entry in group]
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else "; see `dpbandits list`"
        raise InvalidParameterError(f"no algorithm, environment or bundled study is named {name!r}{hint}")
    return found


def _describe_user_algorithm(name: str) -> dict[str, Any]:
    """A user's algorithm named as a study names it (``package.module:Object`` or an entry point).

    Imports the user's module, as a study naming it does.
    """
    from dpbandits.algorithms.registry import get_algorithm
    from dpbandits.algorithms.user_imports import load_user_object

    spec = get_algorithm(name)
    found = load_user_object(name)
    return {
        "type": "algorithm", "name": name, "family": spec.family, "privacy": spec.privacy,
        "class": name if inspect.isclass(found) else None, "is_algorithm": True,
        "environments": list(spec.environments), "metrics": list(spec.metrics),
        "proportion_metrics": list(spec.proportion_metrics), "parameters": _parameters(spec.simulate),
        "documentation": plain_text(inspect.getdoc(found) or spec.description),
    }


def _table(title: str, columns: tuple[str, ...], rows: Sequence[tuple[str, ...]], *, names: int = 1) -> Any:
    """A rich table whose first ``names`` columns are never cut or wrapped; the others wrap."""
    from rich.table import Table

    table = Table(title=title or None, title_justify="left")
    for index, column in enumerate(columns):
        if index < names:
            width = max([len(column), *(len(row[index]) for row in rows)])
            table.add_column(column, no_wrap=True, min_width=width)
        else:
            table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def _console() -> Any:
    from dpbandits._cli_group import make_console

    return make_console(wide_when_piped=True)


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


_JSON = typer.Option(False, "--json", help="Print JSON (for scripts) instead of tables.")


def list_command(as_json: bool = _JSON) -> None:
    """List registered environments, algorithms (with the privacy each gives) and bundled studies."""
    listed = catalogue()
    if as_json:
        _print_json(listed)
        return
    console = _console()
    console.print(_table("Environments", ("name", "kind", "description"),
                         [(e["name"], e["kind"], e["description"]) for e in listed["environments"]]))
    console.print(_table("Algorithms (dpbandits show NAME for parameters)", ("name", "family", "privacy", "metrics"),
                         [(a["name"], a["family"], a["privacy"], ", ".join(a["metrics"]))
                          for a in listed["algorithms"]]))
    console.print(_table("Bundled studies (dpbandits reproduce NAME; dpbandits init-study NAME to edit one)",
                         ("name", "description"), [(s["name"], s["description"]) for s in listed["studies"]]))


def _class_name(cls: type | None) -> str | None:
    """``dpbandits.Name`` for a class exported from the package, else its full path (None for none)."""
    if cls is None:
        return None
    import dpbandits

    exported = getattr(dpbandits, cls.__name__, None) is cls
    return f"dpbandits.{cls.__name__}" if exported else f"{cls.__module__}.{cls.__qualname__}"


def _parameter_rows(parameters: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(p["name"], "required" if p["required"] else json.dumps(p["default"], ensure_ascii=False))
            for p in parameters]


def show_command(
    name: Annotated[str, typer.Argument(help="An algorithm, environment or bundled study (see `dpbandits list`).")],
    as_json: bool = _JSON,
) -> None:
    """Describe an algorithm, environment or bundled study in full: its privacy, parameters and documentation."""
    found = describe(name)
    if as_json:
        _print_json(found)
        return
    from rich.markup import escape

    console = _console()
    for entry in found:
        if entry["type"] == "study":
            console.print(f"[bold]{escape(entry['name'])}[/bold] (bundled study): {escape(entry['description'])}")
            console.print(f"run it: dpbandits reproduce {entry['name']}; edit a copy: dpbandits init-study {entry['name']}\n")
            console.print(entry["toml"], highlight=False, markup=False)  # as written: a copy parses
            continue
        if entry["type"] == "algorithm":
            role = "algorithm" if entry["is_algorithm"] else "theory curve"
            console.print(f"[bold]{escape(entry['name'])}[/bold] ({role}, family {entry['family']})")
            console.print(f"privacy:      {escape(entry['privacy'])}")
            console.print("class:        " + (entry["class"] or "none (a theory curve: computed from its parameters, "
                                                                "it reads no data)"), highlight=False, markup=False)
            console.print(f"environments: {', '.join(entry['environments']) or 'any'}")
            console.print(f"metrics:      {', '.join(entry['metrics'])}")
            where = "a study's [[algorithms]] entry (or its params) or in its [grid]"
        else:
            console.print(f"[bold]{escape(entry['name'])}[/bold] (environment, kind {entry['kind']}): "
                          f"{escape(entry['description'])}")
            where = "a study's [environment] table (or its params) or in its [grid]"
        console.print(f"parameters:   set in {escape(where)}")
        console.print(_table("", ("parameter", "default"), _parameter_rows(entry["parameters"])))
        if entry["documentation"]:
            console.print(entry["documentation"], highlight=False, markup=False)
        console.print()


def init_study_command(
    name: Annotated[str, typer.Argument(
        help="A bundled study (see `dpbandits list`); default: quickstart, a private study (DP-BAI at five ε).")
    ] = DEFAULT_TEMPLATE,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="File (or directory) to write (default: ./NAME.toml).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the file if it exists.")] = False,
) -> None:
    """Write a copy of a bundled study (default: the private quickstart) to a TOML file to edit, then `dpbandits run` it."""
    from dpbandits.experiments.bundled import bundled_study_text
    from dpbandits.experiments.store import atomic_write_text

    text = bundled_study_text(name)
    target = out if out is not None else Path(f"{name}.toml")
    if target.is_dir():
        target = target / f"{name}.toml"
    if target.exists() and not force:
        raise InvalidParameterError(f"{target} exists; pass --force to overwrite it, or --out to write elsewhere")
    atomic_write_text(target, text)
    typer.echo(f"wrote {target}; edit it, then: dpbandits run {target} --out {_fresh_run_dir(name)}")


def _fresh_run_dir(name: str) -> str:
    """A run directory for an edited copy of study ``name`` that does not exist yet.

    Not ``runs/NAME``: ``dpbandits reproduce NAME`` (the README's first command) fills that one, and a
    run directory of another study is refused.
    """
    candidate = Path("runs") / f"my-{name}"
    number = 2
    while candidate.exists():
        candidate, number = Path("runs") / f"my-{name}-{number}", number + 1
    return candidate.as_posix()


def register(app: typer.Typer) -> None:
    """Add ``list``, ``show`` and ``init-study`` to the ``dpbandits`` command."""
    app.command("list")(list_command)
    app.command("show")(show_command)
    app.command("init-study")(init_study_command)
