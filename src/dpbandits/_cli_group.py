"""The ``dpbandits`` command group: one-line errors, global options, output streams.

Every command of :mod:`dpbandits.cli` runs inside :class:`CommandGroup`, which

* turns every error into one ``Error: ...`` line on stderr and a non-zero exit — or, when
  ``--json`` is on the command line, into one JSON object ``{"error": "...", "exit_code": n}`` on
  stdout (same exit status), so a script that asked for JSON always gets JSON;
* accepts the global options ``-q/--quiet`` and ``-v/--verbose`` anywhere on the line (before or
  after the command), and ``--json`` before the command as well as after it (for the commands that
  print JSON);
* shows flags as flags in ``--help`` (no ``<bool>`` after an option that takes no value);
* ends quietly when its output is closed early (``dpbandits list | head -1``, ``--help`` too: exit status 141, the
  status of a process killed by SIGPIPE, and no message);
* writes on any terminal encoding: a character the terminal cannot encode is written as its ASCII
  spelling (``ε`` as ``eps``, ``—`` as ``-``) or ``?``, never an encoding error part-way through.

Importing this module imports typer and the standard library only (see :mod:`dpbandits.cli`).
"""

from __future__ import annotations

import codecs
import contextlib
import copy
import errno
import inspect
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

import typer
from typer.core import TyperGroup

from dpbandits._core.errors import DPBanditsError

__all__ = ["CommandGroup", "configure_logging", "fail", "make_console", "one_line"]

#: Exit status of a command whose output pipe was closed (128 + SIGPIPE, what a shell reports
#: for a process killed by SIGPIPE).
BROKEN_PIPE_STATUS = 141

_JSON_FLAG = "--json"
_ERROR_HANDLER = "dpbandits-ascii"
_ASCII_SPELLINGS = {
    "ε": "eps", "δ": "delta", "η": "eta", "β": "beta", "λ": "lambda", "μ": "mu", "σ": "sigma", "Σ": "Sigma",
    "ρ": "rho", "α": "alpha", "γ": "gamma", "θ": "theta", "φ": "phi", "Δ": "Delta", "π": "pi", "τ": "tau",
    "—": "-", "–": "-", "…": "...", "→": "->", "←": "<-", "≤": "<=", "≥": ">=", "≠": "!=", "×": "x", "·": "*",
    "±": "+/-", "≈": "~", "∞": "inf", "√": "sqrt", "²": "^2", "³": "^3", "⁰": "^0", "¹": "^1", "‖": "||",
    "“": '"', "”": '"', "‘": "'", "’": "'", "•": "*", "✓": "ok", "✗": "x", "⁻": "^-",
}


def one_line(message: str) -> str:
    """A possibly multi-line message as one line: ``first line: second; third``."""
    first, *rest = [line.strip() for line in message.splitlines() if line.strip()] or [""]
    return first if not rest else f"{first.rstrip(':')}: {'; '.join(rest)}"


class _ErrorFormat:
    """Whether this invocation reports errors as JSON on stdout (``--json`` given) or text on stderr."""

    as_json = False


def _report(message: str, code: int) -> None:
    if _ErrorFormat.as_json:
        typer.echo(json.dumps({"error": one_line(message), "exit_code": code}, ensure_ascii=False))
    else:
        typer.echo(f"Error: {one_line(message)}", err=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """Report ``message`` as the command's one error line (or JSON object) and exit with ``code``."""
    _report(message, code)
    raise typer.Exit(code)


# ------------------------------------------------------------------------------ logging
class _CommandLineHandler(logging.StreamHandler[TextIO]):
    """The handler the CLI puts on the ``dpbandits`` logger (one per invocation, on the current stderr)."""


def remove_command_line_handlers() -> None:
    """Take the CLI's handler off the ``dpbandits`` logger (the library logs as its host configures it)."""
    logger = logging.getLogger("dpbandits")
    added = [handler for handler in logger.handlers if isinstance(handler, _CommandLineHandler)]
    for handler in added:
        logger.removeHandler(handler)
    if added:
        logger.setLevel(logging.NOTSET)
        logger.propagate = True


def configure_logging(*, quiet: bool = False, verbose: bool = False) -> None:
    """Send the library's log records (logger ``dpbandits``) to stderr as ``[dpbandits] message`` lines.

    The level is INFO (progress lines, notes), WARNING with ``quiet`` and DEBUG (per-cell timings,
    the backend's choices) with ``verbose``. Called once per invocation, and again when a global
    option follows the command.
    """
    remove_command_line_handlers()
    logger = logging.getLogger("dpbandits")
    handler = _CommandLineHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[dpbandits] %(name)s: %(message)s" if verbose else "[dpbandits] %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False


# ------------------------------------------------------------------------------ global options
_GLOBALS_KEY = "dpbandits.global_options"
_GLOBAL_NAMES = ("quiet", "verbose", "json")


def _global_name(param: Any) -> str:
    return "json" if _JSON_FLAG in getattr(param, "opts", ()) else str(param.name)


def _global_flag(ctx: Any, param: Any, value: bool) -> bool:
    """Record a global flag given on any level of the line; apply -q/-v at once."""
    flags: set[str] = ctx.find_root().meta.setdefault(_GLOBALS_KEY, set())
    if value:
        flags.add(_global_name(param))
    if {"quiet", "verbose"} <= flags:
        fail("--quiet and --verbose exclude each other", code=2)
    if param.name in ("quiet", "verbose"):
        configure_logging(quiet="quiet" in flags, verbose="verbose" in flags)
    return value


def _hidden_copy(option: Any) -> Any:
    """A copy of the root's ``option`` for a command: hidden (the root's ``--help`` lists it), not passed on."""
    copied = copy.copy(option)
    copied.hidden, copied.expose_value, copied.callback = True, False, _global_flag
    return copied


def _json_or_global(callback: Callable[..., Any] | None) -> Callable[[Any, Any, Any], Any]:
    """A command's ``--json`` callback that is also set by ``--json`` before the command."""

    def resolved(ctx: Any, param: Any, value: Any) -> Any:
        value = bool(value) or "json" in ctx.find_root().meta.get(_GLOBALS_KEY, set())
        return callback(ctx, param, value) if callback is not None else value

    return resolved


def _prints_json(command: Any) -> bool:
    return any(_JSON_FLAG in getattr(param, "opts", ()) for param in command.params)


def _flag_help_option(get_help_option: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def flag_help_option(ctx: Any) -> Any:
        option = get_help_option(ctx)
        if option is not None and option.metavar is None:
            option.metavar = ""  # a flag, not `--help <bool>`
        return option

    return flag_help_option


def _prepare(command: Any, globals_: Sequence[Any] = ()) -> None:
    """Let ``command`` and its subcommands take the root's global options; show flags as flags in ``--help``.

    Called on the root group (``globals_`` empty): its ``-q``, ``-v`` and ``--json`` options are
    recorded as they are parsed, and copies of ``-q`` and ``-v`` are added to every subcommand.
    """
    if getattr(command, "_dpbandits_prepared", False):
        return
    command._dpbandits_prepared = True
    command.get_help_option = _flag_help_option(command.get_help_option)
    root = not globals_
    for param in command.params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # typer shows `<bool>` after a flag: no value follows a flag
        if root and _global_name(param) in _GLOBAL_NAMES:
            param.callback = _global_flag
        elif _JSON_FLAG in getattr(param, "opts", ()):
            param.callback = _json_or_global(param.callback)
    if root:
        globals_ = [param for param in command.params if param.name in ("quiet", "verbose")]
    else:
        command.params.extend(_hidden_copy(option) for option in globals_)
    for sub in getattr(command, "commands", {}).values():
        _prepare(sub, globals_)


# ------------------------------------------------------------------------------ output streams
def _ascii_spelling(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start:error.end]
    return "".join(_ASCII_SPELLINGS.get(char, "?") for char in text), error.end


def _register_error_handler() -> None:
    try:
        codecs.lookup_error(_ERROR_HANDLER)
    except LookupError:
        codecs.register_error(_ERROR_HANDLER, _ascii_spelling)


def configure_streams() -> None:
    """Let stdout and stderr write any text on a terminal of any encoding (see the module docstring)."""
    _register_error_handler()
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "utf-8"
        with contextlib.suppress(LookupError):
            if codecs.lookup(encoding).name.startswith("utf"):
                continue
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors=_ERROR_HANDLER)  # type: ignore[union-attr]


def _silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's last flush cannot fail."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _stdout_is_devnull() -> bool:
    """Whether stdout's file descriptor is /dev/null (where a broken pipe's handlers point it)."""
    try:
        found, devnull = os.fstat(sys.stdout.fileno()), os.stat(os.devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test runner's buffer)
        return False
    return (found.st_dev, found.st_ino) == (devnull.st_dev, devnull.st_ino)


def make_console(*, wide_when_piped: bool = False, min_width: int | None = None) -> Any:
    """A rich console on stdout for the commands' tables; a closed pipe ends the command quietly.

    ``wide_when_piped``: piped output has no terminal width: do not squeeze it into 80 columns.
    ``min_width``: at least this wide (wider on a wider terminal).
    """
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich exits with status 1; the group ends with 141, quietly
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    console = _Console()
    if wide_when_piped and not console.is_terminal:
        console.width = max(console.width, 160)
    if min_width is not None:
        console.width = max(min_width, console.width)
    return console


def _is_broken_pipe(exc: BaseException) -> bool:
    return isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE)


# ------------------------------------------------------------------------------ the group
def reflow_help(text: str) -> str:
    r"""A command's help with each paragraph on one line, so that ``--help`` wraps it to the terminal.

    Typer keeps the line breaks of every paragraph but the first: a docstring wrapped at 100
    columns then prints as ragged lines on an 80-column terminal. Paragraphs that are lists or
    literal blocks (lines starting with ``- ``, ``* `` or an indent, or a paragraph marked ``\b``) and
    anything after ``\f`` keep their lines.
    """
    body, marker, rest = inspect.cleandoc(text).partition("\f")
    paragraphs = []
    for paragraph in body.split("\n\n"):
        lines = paragraph.split("\n")
        literal = paragraph.startswith("\b") or any(line.startswith(("- ", "* ", "  ")) for line in lines)
        paragraphs.append(paragraph if literal else " ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs) + marker + rest


class CommandGroup(TyperGroup):
    """Every error of every command ends as one ``Error: ...`` line on stderr and a non-zero exit.

    Library errors (:class:`~dpbandits._core.errors.DPBanditsError`), file-system errors and
    exhausted memory exit with status 1; usage errors (a bad option value) with status 2; a closed
    output pipe with 141, silently; anything else is a bug, reported in one line too
    (``DPBANDITS_DEBUG=1`` shows the traceback). With ``--json`` the line is a JSON object on stdout.
    """

    #: The order ``--help`` lists the commands in (others follow in registration order).
    COMMAND_ORDER = ("list", "show", "init-study", "run", "reproduce", "status", "summary", "plot",
                     "account", "audit", "serve", "api-key", "version")

    def list_commands(self, ctx: Any) -> list[str]:
        """The commands, in :attr:`COMMAND_ORDER` (catalogue, studies, accounting, service, version)."""
        names = super().list_commands(ctx)
        rank = {name: index for index, name in enumerate(self.COMMAND_ORDER)}
        return sorted(names, key=lambda name: rank.get(name, len(rank)))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command, its help text reflowed (:func:`reflow_help`) to the terminal's width."""
        command = super().get_command(ctx, cmd_name)
        if command is not None and command.help:
            command.help = reflow_help(command.help)
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The command named first in ``args``; ``--json`` before a command that prints no JSON is refused."""
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and "json" in ctx.meta.get(_GLOBALS_KEY, set()) and not _prints_json(command):
            fail(f"--json: `{name}` prints no JSON; drop --json", code=2)
        return name, command, rest

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException, KeyboardInterrupt, SystemExit):
            raise
        except DPBanditsError as exc:
            if os.environ.get("DPBANDITS_DEBUG"):  # e.g. a user's algorithm failed: show where
                traceback.print_exception(exc)
            fail(str(exc))
        except OSError as exc:
            if _is_broken_pipe(exc):  # the reader went away (`dpbandits list | head -1`): end quietly
                _silence_stdout()
                raise typer.Exit(BROKEN_PIPE_STATUS) from None
            where = f" {exc.filename!r}" if exc.filename else ""
            fail(f"cannot access{where}: {exc.strerror or exc}")
        except MemoryError:
            fail("out of memory; lower trials, chunk_size, the study's sizes or --workers")
        except Exception as exc:
            if os.environ.get("DPBANDITS_DEBUG"):
                raise
            fail(f"internal error ({type(exc).__name__}: {exc}); please report it "
                 "(DPBANDITS_DEBUG=1 shows the traceback)")

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the CLI; usage errors are one line too (not a usage block)."""
        _prepare(self)
        tokens = list(sys.argv[1:] if args is None else args)
        before_separator = tokens[: tokens.index("--")] if "--" in tokens else tokens
        _ErrorFormat.as_json = _JSON_FLAG in before_separator
        try:
            return self._main(args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        finally:
            _ErrorFormat.as_json = False
            remove_command_line_handlers()  # the library logs as configured by its host again

    def _main(
        self,
        args: Sequence[str] | None,
        prog_name: str | None,
        complete_var: str | None,
        standalone_mode: bool,
        windows_expand_args: bool,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        configure_streams()
        stdout_was_devnull = _stdout_is_devnull()
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except SystemExit as exc:
            # --help is printed by typer's own rich console, which ends a closed pipe with status 1
            # after pointing stdout at /dev/null: end with the broken pipe's status, as commands do
            if exc.code == 1 and not stdout_was_devnull and _stdout_is_devnull():
                sys.exit(BROKEN_PIPE_STATUS)
            raise
        except typer.TyperException as exc:  # usage errors: a bad option value, a missing argument
            message = one_line(exc.format_message())
            if message:  # (no arguments at all: the help was printed, nothing to add)
                _report(message, exc.exit_code)
            sys.exit(exc.exit_code)
        except typer.Abort:
            _report("aborted", 1)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)
