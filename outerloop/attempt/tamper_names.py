"""What a name in a candidate's Python file stands for, read from its AST.

The tamper analysis (``attempt/tamper_ast.py``) asks of every expression: which module
object or module attribute is this? ``_sys.modules`` is ``sys.modules`` after
``import sys as _sys``; ``dumps`` is ``json.dumps`` after ``from json import dumps``;
``getattr(importlib.import_module("evaluate"), "score")`` is ``evaluate.score``;
``vars(json)["dumps"]`` is ``json.dumps``. Bindings are collected over the whole file
(any scope, any order) and followed through plain assignments (``y = x``) and
parameter defaults, so a spelling that renames a module keeps its meaning. What the
resolver cannot follow (a value through a function call, a container, a loop) stays
unnamed: the analysis flags the places such a value escapes instead.

Static paths (``Path(__file__).parent / "table.json"``) are resolved here too, so reading
a file beside the solver is told apart from reading one outside the scope.
"""

from __future__ import annotations

import ast
import posixpath
from dataclasses import dataclass, field

BUILTIN_NAMES = frozenset({
    "exec", "eval", "compile", "__import__", "setattr", "delattr", "getattr", "hasattr",
    "vars", "globals", "locals", "open", "print", "breakpoint", "__build_class__"})
"""Builtins the analysis names (``builtins.<name>``) when a bare name is not rebound by
an import: the others (``len``, ``max``) are everyday code."""

MAX_BINDING_PASSES = 6


@dataclass
class Names:
    """The bindings of one file: ``name -> qualified name`` (``_sys -> sys``), the
    qualified names known to be modules, and names bound to static paths."""

    package: str  # the file's own package ("solver" for solver/tour.py)
    path: str  # the file's repository path (what ``__file__`` resolves to)
    bound: dict[str, str] = field(default_factory=dict)
    modules: set[str] = field(default_factory=set)
    paths: dict[str, str] = field(default_factory=dict)

    def qual(self, node: ast.AST) -> str | None:
        """The module or module attribute ``node`` evaluates to, dotted, or None."""
        if isinstance(node, ast.Name):
            if node.id in self.bound:
                return self.bound[node.id]
            if node.id == "__builtins__":
                return "builtins"
            return f"builtins.{node.id}" if node.id in BUILTIN_NAMES else None
        if isinstance(node, ast.Attribute):
            base = self.qual(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Subscript):
            base = self.qual(node.value)
            key = constant_str(node.slice)
            if base == "sys.modules" and key:
                return key
            if base and base.endswith(".__dict__") and key:
                return f"{base.removesuffix('.__dict__')}.{key}"
            return None
        if isinstance(node, ast.Call):
            return self._call_qual(node)
        if isinstance(node, ast.NamedExpr):
            return self.qual(node.value)
        return None

    def _call_qual(self, node: ast.Call) -> str | None:
        func = self.qual(node.func)
        first = node.args[0] if node.args else None
        if func in ("importlib.import_module", "builtins.__import__") and first is not None:
            name = constant_str(first)
            if name is None:
                return None
            if func == "builtins.__import__" and len(node.args) < 4 and not node.keywords:
                return name.split(".")[0]  # __import__("a.b") is the package a
            return name
        if func in ("builtins.getattr", "builtins.vars", "importlib.reload") and first:
            base = self.qual(first)
            if base is None:
                return None
            if func == "builtins.vars":
                return f"{base}.__dict__"
            if func == "importlib.reload":
                return base
            attr = constant_str(node.args[1]) if len(node.args) > 1 else None
            return f"{base}.{attr}" if attr else None
        return None

    def is_module(self, node: ast.AST) -> bool:
        """True when ``node`` is a module object (not one of its attributes)."""
        qual = self.qual(node)
        if qual is None:
            return False
        if isinstance(node, ast.Call):
            return self.qual(node.func) in ("importlib.import_module", "builtins.__import__",
                                            "importlib.reload")
        if isinstance(node, ast.Subscript):
            return self.qual(node.value) == "sys.modules"
        return qual in self.modules or qual == "builtins"

    def static_path(self, node: ast.AST) -> str | None:
        """The repository-relative path ``node`` builds, normalised (absolute paths
        stay absolute; a path climbing out of the repository starts with ``..``), or
        None when it is built at runtime."""
        raw = self.raw_path(node)
        if raw is None:
            return None
        if raw.startswith("/"):
            return posixpath.normpath(raw)
        return posixpath.normpath(raw or ".")

    def raw_path(self, node: ast.AST) -> str | None:
        if (text := constant_str(node)) is not None:
            return text
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return self.path
            return self.paths.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = self.raw_path(node.left), self.raw_path(node.right)
            return posixpath.join(left, right) if left is not None and right is not None \
                else None
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = self.raw_path(node.value)
            return posixpath.dirname(posixpath.normpath(inner)) if inner is not None else None
        if isinstance(node, ast.Call):
            return self._call_path(node)
        return None

    def _call_path(self, node: ast.Call) -> str | None:
        if node.keywords:
            return None
        args = [self.raw_path(a) for a in node.args]
        if any(a is None for a in args):
            return None
        parts = [a for a in args if a is not None]
        func = self.qual(node.func)
        if func in ("pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath",
                    "pathlib.PurePosixPath", "os.path.join"):
            return posixpath.join(*parts) if parts else "."
        if func in ("os.fspath", "os.path.abspath", "os.path.normpath", "os.path.realpath",
                    "builtins.str") and len(parts) == 1:
            return parts[0]
        if func == "os.path.dirname" and len(parts) == 1:
            return posixpath.dirname(posixpath.normpath(parts[0]))
        if isinstance(node.func, ast.Attribute):
            inner = self.raw_path(node.func.value)
            if inner is None:
                return None
            method = node.func.attr
            if method in ("resolve", "absolute") and not parts:
                return inner
            if method == "joinpath":
                return posixpath.join(inner, *parts)
            if method == "with_name" and len(parts) == 1:
                return posixpath.join(posixpath.dirname(posixpath.normpath(inner)), parts[0])
        return None


def constant_str(node: ast.AST) -> str | None:
    """The string ``node`` folds to: a literal, literals joined by ``+``, or
    ``"sep".join([...literals])``; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = constant_str(node.left), constant_str(node.right)
        return left + right if left is not None and right is not None else None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join" and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], (ast.List, ast.Tuple))):
        sep = constant_str(node.func.value)
        parts = [constant_str(e) for e in node.args[0].elts]
        if sep is not None and all(p is not None for p in parts):
            return sep.join(p for p in parts if p is not None)
    return None


def resolve_from(package: str, module: str | None, level: int) -> str | None:
    """The absolute module a ``from`` import names (relative levels resolved against the
    file's ``package``): ``""`` for the repository's root (``from .. import evaluate`` in
    ``solver/x.py``), None when it climbs above it."""
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[:len(parts) - (level - 1)]
    if module:
        base.append(module)
    return ".".join(base)


def dotted(module: str, name: str) -> str:
    """``module.name``, or ``name`` at the repository's root (``module == ""``)."""
    return f"{module}.{name}" if module else name


def walk(tree: ast.AST) -> tuple[list[ast.AST], dict[ast.AST, ast.AST]]:
    """Every node of ``tree`` in source order (iteratively: no recursion limit) and each
    node's parent. The shared ``Load``/``Store`` context nodes are left out."""
    nodes: list[ast.AST] = []
    parent: dict[ast.AST, ast.AST] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        children = []
        for name in node._fields:
            value = getattr(node, name, None)
            for child in value if isinstance(value, list) else (value,):
                if isinstance(child, ast.AST) and not isinstance(child, ast.expr_context):
                    parent[child] = node
                    children.append(child)
        stack.extend(reversed(children))
    return nodes, parent


def collect(nodes: list[ast.AST], package: str, path: str) -> Names:
    """Every binding among ``nodes`` (a file's) to a module, a module attribute or a
    static path."""
    names = Names(package=package, path=path)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names.bound[alias.asname] = alias.name
                    names.modules.add(alias.name)
                else:
                    root = alias.name.split(".")[0]
                    names.bound[root] = root
                    parts = alias.name.split(".")
                    names.modules.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
        elif isinstance(node, ast.ImportFrom):
            module = resolve_from(package, node.module, node.level)
            if module is None:
                continue
            for alias in node.names:
                if alias.name != "*":
                    names.bound[alias.asname or alias.name] = dotted(module, alias.name)
    pairs = [pair for node in nodes for pair in _assignments(node)]
    for _ in range(MAX_BINDING_PASSES):
        before = (len(names.bound), len(names.paths))
        for target, value in pairs:
            if target in names.bound:
                continue
            if (qual := names.qual(value)) is not None:
                names.bound[target] = qual
                if names.is_module(value):
                    names.modules.add(qual)
            elif target not in names.paths and not isinstance(value, ast.Constant) and (
                    found := names.raw_path(value)) is not None:
                names.paths[target] = found
        if (len(names.bound), len(names.paths)) == before:
            break
    return names


def _assignments(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """(name, value) pairs ``node`` binds: ``y = x``, ``a, b = x, y``, ``y: T = x``,
    ``(y := x)``, and parameter defaults (``def f(m=sys)``)."""
    if isinstance(node, ast.Assign):
        pairs: list[tuple[str, ast.AST]] = []
        for target in node.targets:
            pairs += _pairs(target, node.value)
        return pairs
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return _pairs(node.target, node.value)
    if isinstance(node, ast.NamedExpr):
        return _pairs(node.target, node.value)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        pairs = [(a.arg, d) for a, d in zip(positional[len(positional) - len(args.defaults):],
                                            args.defaults, strict=True)]
        pairs += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                  if d is not None]
        return pairs
    return []


def _pairs(target: ast.AST, value: ast.AST) -> list[tuple[str, ast.AST]]:
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)):
        return [pair for t, v in zip(target.elts, value.elts, strict=True)
                for pair in _pairs(t, v)]
    return []
