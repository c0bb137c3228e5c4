"""A griffe extension: the Sphinx roles of dpbandits' docstrings become mkdocstrings cross-references.

The docstrings are numpydoc with Sphinx roles (``:class:`Accountant```, ``:func:`~pkg.mod.f```,
``:meth:`text <pkg.mod.C.m>```). mkdocstrings renders Markdown, where a role would show as raw text;
once the whole package is loaded, this rewrites each role:

* a reference to a dpbandits object becomes an autorefs link to where that object is rendered
  (``[`Accountant`][dpbandits.privacy.accounting.Accountant]``). A short name is resolved in the
  scope of the docstring's object (its members, inherited ones included, then its parents'), a
  leading ``.`` relative to the current module or its package, as Sphinx does. A reference that does
  not resolve is left as a link to its literal target, so ``mkdocs build --strict`` fails on it: a
  broken reference in a docstring breaks the docs build.
* a reference outside dpbandits (NumPy, SciPy, the standard library and builtins: no inventory is
  fetched, the build is offline) or to a private object (not rendered) becomes inline code.

A leading ``~`` shows the last component only. Packages re-export their submodules' classes
(``dpbandits.privacy.Accountant``); each object is rendered once, where it is defined, so those
re-exports are dropped from the rendered tree after the references are resolved. An object defined in
a private module (``dpbandits.privacy._exponential``) is rendered where a public module re-exports it
(``dpbandits.privacy.mechanisms``), and references to it link there.
"""

from __future__ import annotations

import builtins
import contextlib
import re
from collections.abc import Iterator
from typing import Any

import griffe

PACKAGE = "dpbandits"
_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj):`(?P<body>[^`]+)`")
_EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$")


def _lookup(root: griffe.Module, path: str) -> griffe.Object | griffe.Alias | None:
    if path == PACKAGE:
        return root
    if not path.startswith(PACKAGE + "."):
        return None
    try:
        return root[path.removeprefix(PACKAGE + ".")]
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _rendered_path(found: griffe.Object | griffe.Alias) -> str:
    """Where an object is rendered: inherited members under the inheriting class, aliases at their target."""
    if found.is_alias and not found.inherited:  # type: ignore[union-attr]
        try:
            return found.final_target.path  # type: ignore[union-attr]
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return found.path
    return found.path


def _module_of(obj: griffe.Object) -> griffe.Object:
    while not obj.is_module and obj.parent is not None:
        obj = obj.parent
    return obj


def _is_private(path: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in path.split("."))


def _public_homes(objects: list[griffe.Object]) -> dict[str, str]:
    """Private-module objects -> the public module's alias that renders them (listed in its ``__all__``)."""
    homes: dict[str, str] = {}
    for module in objects:
        if not module.is_module or _is_private(module.path):
            continue
        exports = {str(name) for name in getattr(module, "exports", None) or ()}  # its __all__: what it renders
        for name, member in module.members.items():
            if not member.is_alias or name not in exports:
                continue
            target = member.target_path  # type: ignore[union-attr]
            if _is_private(target) and not target.startswith(module.path + "."):
                homes.setdefault(target, member.path)
    return homes


_HOMES: dict[str, str] = {}


def _resolve(target: str, obj: griffe.Object, root: griffe.Module) -> str:
    """The path where ``target``, as written in ``obj``'s docstring, is rendered (or ``target``)."""
    if target.startswith("."):
        module = _module_of(obj)
        bases = [module.path] + ([module.parent.path] if module.parent is not None else [])
        candidates = [base + target for base in bases]
    elif target.startswith(PACKAGE + ".") or target == PACKAGE:
        candidates = [target]
    else:
        first, _, rest = target.partition(".")
        candidates = []
        scope: griffe.Object | None = obj
        while scope is not None:  # the object's own members (inherited ones too), then its parents'
            if first in scope.all_members:
                candidates.append(f"{scope.path}.{target}")
                break
            scope = scope.parent
        with contextlib.suppress(griffe.NameResolutionError):
            candidates.append(".".join([obj.resolve(first), rest]).rstrip("."))
    for candidate in candidates:
        found = _lookup(root, candidate)
        if found is not None:
            rendered = _rendered_path(found)
            return _HOMES.get(rendered, rendered)
    return target


def convert_roles(text: str, obj: griffe.Object, root: griffe.Module) -> str:
    """Return ``text`` with every Sphinx role turned into an autorefs link or inline code."""

    def replace(match: re.Match[str]) -> str:
        body = match.group("body").strip()
        explicit = _EXPLICIT.match(body)
        if explicit:
            text, target = explicit.group("text"), explicit.group("target").removeprefix("~")
        else:
            target = body.removeprefix("~")
            text = target.rsplit(".", 1)[-1] if body.startswith("~") else target
        target = _resolve(target.removesuffix("()"), obj, root)
        parts = target.split(".")
        builtin = len(parts) == 1 and hasattr(builtins, target)  # KeyboardInterrupt, ValueError, ...
        external = builtin or (len(parts) > 1 and parts[0] != PACKAGE)
        if external or _is_private(target):
            return f"`{text}`"
        return f"[`{text}`][{target}]"

    return _ROLE.sub(replace, text)


def _walk(obj: griffe.Object) -> Iterator[griffe.Object]:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)  # type: ignore[arg-type]


def _drop_reexports(module: griffe.Object) -> None:
    for name, member in list(module.members.items()):
        if member.is_alias and member.target_path.startswith(module.path + "."):  # type: ignore[union-attr]
            del module.members[name]


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles in every docstring of the package once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != PACKAGE:
            return
        objects = list(_walk(pkg))
        _HOMES.clear()
        _HOMES.update(_public_homes(objects))
        for obj in objects:
            if obj.docstring is not None:
                obj.docstring.value = convert_roles(obj.docstring.value, obj, pkg)
        for obj in objects:
            if obj.is_module:
                _drop_reexports(obj)
