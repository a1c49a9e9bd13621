"""The tamper check's reading of a changed Python file: what its code can reach.

Candidate code is imported by the evaluator, so it can patch the measurement from
inside: replace ``json.dumps`` or ``sys.stdout``, rewrite the evaluator's own scoring
function, print a fake line from a thread after the evaluator's. A scan of added lines
for spellings misses every respelling (``import sys as _sys``, ``setattr``, a base64
payload run by ``exec``); this analysis parses the whole file at the seal and resolves
each name to the module object it stands for (``attempt/tamper_names.py``), then
flags by meaning:

- runtime code: ``exec``/``eval``/``compile``/``__import__`` however reached, decoders
  (base64, zlib, codecs, marshal, pickle) in a file that runs code, loaders;
- patching: an attribute of a module the candidate does not own assigned or deleted
  (``json.dumps = f``, ``evaluate.score = f``, ``sys.modules["__main__"].x = f``),
  ``setattr``/``delattr`` on anything but ``self``/``cls``, writes through
  ``__dict__``/``vars()``/``globals()``, function internals (``__code__``,
  ``__globals__``), a module object passed around as a value;
- the process: ``sys.stdout``/``stderr`` beyond printing to them, file descriptors 1
  and 2, ``sys.modules``/``sys.path``, exit hooks, signals, finalisers, threads and
  processes, trace and audit hooks, frames, the garbage collector, ``__main__``;
- files: listing directories, opening a path built at runtime or outside the scope;
- references: the metric's name, the seed variable, modules and files outside scope.

A file that does not parse is itself a finding: what cannot be read cannot be cleared.
This is a reading of source, not a proof (docs/security.md, "The tamper check").
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from outerloop.attempt.tamper_exit import exit_printers
from outerloop.attempt.tamper_names import (
    Names,
    collect,
    constant_str,
    dotted,
    resolve_from,
    walk,
)

MAX_DETAIL_CHARS = 200

EXEC = "runs code built at runtime ({q}); what it runs cannot be read"
STDOUT = "replaces or writes around the process's stdout/stderr ({q})"
IMPORT_SYSTEM = "reaches into the import system ({q}), where the evaluator's modules live"
CALLER = "reaches into the calling program (the evaluator) through {q}"
MAIN = "reaches the __main__ module, which is the evaluator when it runs as a script"
PROCESS = "starts a thread or a process ({q}), which may print after the evaluator did"
EXIT = "registers code that runs at interpreter exit ({q}), after the evaluator printed"
SIGNAL = "installs a signal handler ({q})"
FINALISER = "defines a finaliser ({q}) that may run after the evaluator printed its result"
ENDS = "ends or signals the process itself ({q})"
NATIVE = "loads native code ({q}), which the analysis cannot read"
UNPICKLE = "deserialises with {q}, which can run code"
DECODES = "decodes a payload at runtime ({q}) in a file that runs code built at runtime"
PATCHES = "replaces {q}, an attribute of a module the evaluator shares"
PATCHES_OUTSIDE = "rewrites {q}, which code outside the scope (the evaluator) defines"
SETATTR = "sets or deletes an attribute through {q} on {what}"
NAMESPACE = "reaches a module's namespace directly ({q})"
INTERNALS = "reaches function or frame internals ({q})"
ESCAPES = "passes the module {q} around as a value (patching it out of sight)"
DYNAMIC_ATTR = "reads an attribute of {q} by a name built at runtime"
DYNAMIC_IMPORT = "imports a module by a name built at runtime"
PRIVATE = "uses {q}, a private part of a module the evaluator shares"
STAR = "imports every name of {q} (*), which hides what the code uses from it"
BUILTINS = "touches the builtins module (patching builtins)"
LISTS = "lists files through {q} outside the scope, or by a path built at runtime"
OPENS_DYNAMIC = "opens a file by a path built at runtime (it may read outside the scope)"
OPENS_OUTSIDE = "opens {q}, a path outside the scope"
DEVICE = "names {q}, the process's own descriptors or memory"
GC = "reaches other modules' objects through the garbage collector ({q})"
ENCODING = "declares the source encoding {q}, which shows a reader other code than Python runs"

# Module objects: any reference to one (its import included) means the rule.
MODULE_RULES: dict[str, str] = {
    "atexit": EXIT, "signal": SIGNAL, "_signal": SIGNAL, "_thread": PROCESS,
    "subprocess": PROCESS, "_posixsubprocess": PROCESS, "pty": PROCESS,
    "concurrent.futures.process": PROCESS, "multiprocessing.pool": PROCESS,
    "builtins": BUILTINS, "__main__": MAIN, "ctypes": NATIVE, "_ctypes": NATIVE,
    "cffi": NATIVE, "faulthandler": EXIT, "runpy": EXEC, "code": EXEC, "codeop": EXEC,
    "marshal": UNPICKLE, "zipimport": EXEC, "importlib.machinery": EXEC,
    "importlib.abc": EXEC,
}
NAME_RULES: dict[str, str] = {
    **{f"builtins.{n}": EXEC for n in ("exec", "eval", "compile", "__import__",
                                        "__build_class__")},
    **{f"sys.{n}": IMPORT_SYSTEM for n in ("modules", "path", "meta_path", "path_hooks",
                                            "path_importer_cache")},
    **{f"sys.{n}": STDOUT for n in ("stdout", "stderr", "__stdout__", "__stderr__",
                                     "displayhook", "__displayhook__")},
    **{f"sys.{n}": CALLER for n in ("_getframe", "settrace", "setprofile", "addaudithook",
                                     "excepthook", "__excepthook__", "unraisablehook",
                                     "breakpointhook", "monitoring", "call_tracing",
                                     "_current_frames", "audit")},
    **{f"threading.{n}": CALLER for n in ("settrace", "setprofile", "excepthook",
                                           "settrace_all_threads", "setprofile_all_threads")},
    **{f"threading.{n}": PROCESS for n in ("Thread", "Timer")},
    **{f"multiprocessing.{n}": PROCESS for n in ("Process", "Pool", "get_context", "Manager",
                                                  "set_start_method")},
    **{f"inspect.{n}": CALLER for n in ("stack", "currentframe", "getouterframes",
                                         "getinnerframes", "trace", "getframeinfo",
                                         "getmembers", "getmodule")},
    **{f"gc.{n}": GC for n in ("get_objects", "get_referrers", "get_referents", "callbacks")},
    **{f"os.{n}": STDOUT for n in ("dup", "dup2", "openpty")},
    **{f"os.{n}": ENDS for n in ("_exit", "abort", "kill", "killpg")},
    **{f"os.{n}": PROCESS for n in ("fork", "forkpty", "system", "popen",
                                     "register_at_fork")},
    **{f"contextlib.{n}": STDOUT for n in ("redirect_stdout", "redirect_stderr")},
    **{f"concurrent.futures.{n}": PROCESS for n in ("ThreadPoolExecutor",
                                                     "ProcessPoolExecutor")},
    **{f"weakref.{n}": FINALISER for n in ("finalize",)},
    **{f"pickle.{n}": UNPICKLE for n in ("load", "loads", "Unpickler")},
    **{f"_pickle.{n}": UNPICKLE for n in ("load", "loads", "Unpickler")},
    **{f"{m}.{n}": UNPICKLE for m in ("dill", "cloudpickle") for n in ("load", "loads")},
    "shelve.open": UNPICKLE, "importlib.reload": EXEC,
    **{f"importlib.util.{n}": EXEC for n in ("module_from_spec", "spec_from_file_location",
                                             "spec_from_loader")},
    **{f"types.{n}": EXEC for n in ("CodeType", "FunctionType", "ModuleType")},
}
PREFIX_RULES: tuple[tuple[str, str], ...] = (
    ("os.exec", PROCESS), ("os.spawn", PROCESS), ("os.posix_spawn", PROCESS))
DECODERS = frozenset({
    *(f"base64.{n}" for n in ("b64decode", "standard_b64decode", "urlsafe_b64decode",
                              "b32decode", "b32hexdecode", "b16decode", "a85decode",
                              "b85decode", "decodebytes", "decode")),
    "codecs.decode", "codecs.getdecoder", "codecs.lookup", "zlib.decompress",
    "zlib.decompressobj", "bz2.decompress", "lzma.decompress", "gzip.decompress",
    *(f"binascii.{n}" for n in ("a2b_base64", "a2b_hex", "unhexlify", "a2b_uu")),
    "builtins.bytes.fromhex"})
INTERNAL_ATTRS = frozenset({
    "__globals__", "__code__", "__closure__", "__builtins__", "__subclasses__",
    "__setattr__", "__delattr__", "__defaults__", "__kwdefaults__", "f_back", "f_globals",
    "f_locals", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame"})
NAMESPACE_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear",
                                "__setitem__", "__delitem__"})
STD_STREAM_METHODS = frozenset({"write", "flush", "isatty", "writelines"})
STREAM_KEYWORDS = frozenset({"file", "stream"})
OPENERS = frozenset({"builtins.open", "io.open", "os.open", "codecs.open", "io.FileIO",
                     "os.fdopen", "os.write", "io.open_code"})
FD_ONLY = frozenset({"os.fdopen", "os.write"})
LISTERS = frozenset({"glob.glob", "glob.iglob", "os.walk", "os.fwalk", "os.listdir",
                     "os.scandir"})
LIST_METHODS = frozenset({"glob", "rglob", "iterdir"})
READ_METHODS = frozenset({"read_text", "read_bytes"})
SAFE_ENCODINGS = frozenset({"utf-8", "utf-8-sig", "ascii", "latin-1", "iso-8859-1"})
SETTABLE_CONFIG = ("torch.backends.",)
"""Attributes of shared modules that are configuration knobs, assigned by everyday code
(``torch.backends.cudnn.benchmark = True``): not patching the measurement."""
DEVICE_PATH = re.compile(r"^/(dev/(std(in|out|err)|fd/|tty)|proc/)")


@dataclass(frozen=True)
class Target:
    """What the analysis knows of the target: the metric, the seed variable, what is
    outside the scope, and which modules the candidate owns."""

    metric: str
    seed_env: str | None
    outside_modules: frozenset[str]
    outside_files: frozenset[str]
    own_modules: frozenset[str]
    in_scope: Callable[[str], bool]
    names_outside_file: Callable[[str], bool]


@dataclass(frozen=True)
class Hit:
    """One thing found: its line, what it means (completing "The candidate ..."), and
    a detail (the source line, or why the file could not be read)."""

    line: int
    meaning: str
    detail: str = ""


def analyse(path: str, data: bytes, target: Target) -> list[Hit]:
    """Every hit in the Python file ``path`` whose content at the seal is ``data``."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
        tree = ast.parse(data, filename=path)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError,
            MemoryError) as exc:
        line = getattr(exc, "lineno", None) or 1
        return [Hit(line, "changes a Python file that cannot be analysed; what cannot be "
                          "read cannot be cleared", f"{type(exc).__name__}: {exc}"[:200])]
    lines = text.splitlines()
    hits: list[Hit] = []
    if encoding.lower() not in SAFE_ENCODINGS:
        hits.append(Hit(1, ENCODING.format(q=encoding)))
    try:
        hits += _Reader(path, tree, target).hits()
    except RecursionError:
        hits.append(Hit(1, "changes a Python file nested too deeply to be analysed"))
    out: list[Hit] = []
    seen: set[tuple[int, str]] = set()
    for hit in sorted(hits, key=lambda h: h.line):
        if (hit.line, hit.meaning) in seen:
            continue
        seen.add((hit.line, hit.meaning))
        source = lines[hit.line - 1].strip() if 0 < hit.line <= len(lines) else ""
        out.append(Hit(hit.line, hit.meaning, (hit.detail or source)[:MAX_DETAIL_CHARS]))
    return out


def package_of(path: str) -> str:
    """The package a repository file belongs to (``solver`` for ``solver/tour.py``)."""
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1])


class _Reader:
    """One pass over a parsed file, with each node's parent at hand."""

    def __init__(self, path: str, tree: ast.AST, target: Target) -> None:
        self.path = path
        self.target = target
        self.nodes, self.parent = walk(tree)
        self.names: Names = collect(self.nodes, package_of(path), path)
        self.found: list[Hit] = []
        self.decodes: list[Hit] = []

    def hit(self, node: ast.AST, meaning: str) -> None:
        self.found.append(Hit(getattr(node, "lineno", 1), meaning))

    def hits(self) -> list[Hit]:
        for node in self.nodes:
            if isinstance(node, ast.Import):
                self.on_import(node)
            elif isinstance(node, ast.ImportFrom):
                self.on_import_from(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name == "__del__":
                    self.hit(node, FINALISER.format(q="__del__"))
            elif isinstance(node, ast.Call):
                self.on_call(node)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                self.on_store(node)
            if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
                self.on_reference(node)
            if (isinstance(node, ast.Attribute) and node.attr in INTERNAL_ATTRS
                    and not _on_super(node)):
                self.hit(node, INTERNALS.format(q=node.attr))
            self.on_strings(node)
        for node, meaning in exit_printers(self.nodes):  # issue 47's spellings
            self.hit(node, meaning)
        if any(h.meaning.startswith("runs code built at runtime") for h in self.found):
            self.found += self.decodes
        return self.found

    # --- imports -----------------------------------------------------------------

    def on_import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.on_imported(node, alias.name)

    def on_import_from(self, node: ast.ImportFrom) -> None:
        module = resolve_from(self.names.package, node.module, node.level)
        if module is None:
            return
        if module:
            self.on_imported(node, module)
        for alias in node.names:
            if alias.name == "*":
                if not self.owns(module):
                    self.hit(node, STAR.format(q=module or "the repository's root"))
                continue
            qual = dotted(module, alias.name)
            if qual in self.target.outside_modules:
                self.hit(node, "imports a module outside the scope (the evaluator or its "
                               "helpers)")
            meaning = _name_rule(qual)
            if meaning and NAME_RULES.get(qual) != STDOUT:  # a stream is judged where used
                self.hit(node, meaning.format(q=qual))
            elif qual in MODULE_RULES:
                self.hit(node, MODULE_RULES[qual].format(q=qual))

    def on_imported(self, node: ast.AST, module: str) -> None:
        """An import of ``module`` (a statement, ``import_module``, ``__import__``)."""
        parts = module.split(".")
        prefixes = [".".join(parts[:k]) for k in range(1, len(parts) + 1)]
        if module in self.target.outside_modules:
            self.hit(node, "imports a module outside the scope (the evaluator or its helpers)")
        for prefix in prefixes:
            if prefix in MODULE_RULES:
                self.hit(node, MODULE_RULES[prefix].format(q=prefix))

    def owns(self, qual: str) -> bool:
        """True when ``qual`` lies in a module of the candidate's own (in scope)."""
        parts = qual.split(".")
        for k in range(len(parts), 0, -1):
            prefix = ".".join(parts[:k])
            if prefix in self.target.outside_modules:
                return False
            if prefix in self.target.own_modules:
                return True
        return False

    def outside(self, qual: str) -> bool:
        """True when ``qual`` lies in the evaluator (outside scope, or ``__main__``)."""
        parts = qual.split(".")
        return parts[0] == "__main__" or any(
            ".".join(parts[:k]) in self.target.outside_modules for k in range(1, len(parts) + 1))

    # --- references --------------------------------------------------------------

    def on_reference(self, node: ast.AST) -> None:
        qual = self.names.qual(node)
        if qual is None:
            return
        if qual in MODULE_RULES:
            if not (isinstance(node, ast.Name) and node.id in self.names.bound):
                self.hit(node, MODULE_RULES[qual].format(q=qual))  # else: where it was bound
        elif (meaning := _name_rule(qual)) is not None:
            if not (meaning == STDOUT and self.stream_use(node)):
                self.hit(node, meaning.format(q=qual.removeprefix("builtins.")))
        elif qual in ("builtins.setattr", "builtins.delattr") and not self.called(node):
            self.hit(node, SETATTR.format(q=qual.removeprefix("builtins."), what="an object"))
        owned = self.owns(qual)
        last = qual.rsplit(".", 1)[-1]
        if (not owned and "." in qual and last.startswith("_") and not last.startswith("__")
                and _name_rule(qual) is None):
            self.hit(node, PRIVATE.format(q=qual))
        if qual.endswith(".__dict__") and not owned:
            self.hit(node, NAMESPACE.format(q=qual))
        if qual in DECODERS:
            self.decodes.append(Hit(getattr(node, "lineno", 1), DECODES.format(q=qual)))
        if self.names.is_module(node) and not owned and self.escapes(node):
            self.hit(node, ESCAPES.format(q=qual))

    def called(self, node: ast.AST) -> bool:
        parent = self.parent.get(node)
        return isinstance(parent, ast.Call) and parent.func is node

    def stream_use(self, node: ast.AST) -> bool:
        """``print(..., file=sys.stderr)`` and ``sys.stderr.write(...)``: printing."""
        parent = self.parent.get(node)
        if isinstance(parent, ast.keyword):
            return parent.arg in STREAM_KEYWORDS
        return (isinstance(parent, ast.Attribute) and parent.value is node
                and parent.attr in STD_STREAM_METHODS and self.called(parent))

    def escapes(self, node: ast.AST) -> bool:
        """True when the module object ``node`` is used as a value: passed to a call,
        stored in a container, returned. Attribute access, an alias (``y = m``), a
        parameter default and ``getattr``/``hasattr`` are followed, not escapes."""
        parent = self.parent.get(node)
        if isinstance(parent, ast.Attribute | ast.arguments | ast.Import | ast.ImportFrom):
            return False
        if isinstance(parent, ast.Call):
            if parent.func is node:
                return False
            func = self.names.qual(parent.func)
            return not (parent.args and parent.args[0] is node and func in (
                "builtins.getattr", "builtins.hasattr", "builtins.vars", "importlib.reload",
                "builtins.setattr", "builtins.delattr"))
        if isinstance(parent, ast.Assign | ast.AnnAssign | ast.NamedExpr):
            return False
        if isinstance(parent, ast.Tuple | ast.List):
            grand = self.parent.get(parent)
            return not (isinstance(grand, ast.Assign) and grand.value is parent)
        return not isinstance(parent, ast.Subscript | ast.Compare)

    # --- calls -------------------------------------------------------------------

    def on_call(self, node: ast.Call) -> None:
        func = self.names.qual(node.func)
        first = node.args[0] if node.args else None
        if func in ("builtins.setattr", "builtins.delattr"):
            if not (isinstance(first, ast.Name) and first.id in ("self", "cls")):
                what = self.names.qual(first) if first is not None else None
                self.hit(node, SETATTR.format(q=func.removeprefix("builtins."),
                                              what=what or "an object"))
                attr = constant_str(node.args[1]) if len(node.args) > 1 else None
                if what is not None and attr is not None:
                    self.on_attribute_store(node, what, attr)
        elif func in ("importlib.import_module", "builtins.__import__"):
            name = constant_str(first) if first is not None else None
            if name is None:
                self.hit(node, DYNAMIC_IMPORT)
            else:
                self.on_imported(node, name)
        elif func == "builtins.getattr" and first is not None and len(node.args) > 1:
            base = self.names.qual(first)
            if base and not self.owns(base) and constant_str(node.args[1]) is None:
                self.hit(node, DYNAMIC_ATTR.format(q=base))
            attr = constant_str(node.args[1])
            if attr in INTERNAL_ATTRS:
                self.hit(node, INTERNALS.format(q=attr))
        elif func == "weakref.ref" and len(node.args) > 1:
            self.hit(node, FINALISER.format(q="weakref.ref with a callback"))
        elif func in OPENERS:
            self.on_open(node, func)
        elif func in LISTERS:
            self.on_list(node, func)
        if isinstance(node.func, ast.Attribute):
            self.on_method(node, node.func)

    def on_open(self, node: ast.Call, func: str) -> None:
        arg = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg in ("file", "path", "fd")), None)
        if arg is None:
            return
        if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
            if arg.value in (1, 2):
                self.hit(node, STDOUT.format(q=f"{func.removeprefix('builtins.')}"
                                               f"({arg.value})"))
            return
        if func in FD_ONLY:
            self.hit(node, STDOUT.format(q=func))
            return
        self.check_path(node, self.names.static_path(arg), OPENS_DYNAMIC, OPENS_OUTSIDE)

    def check_path(self, node: ast.AST, path: str | None, dynamic: str,
                   outside: str) -> None:
        """Flag ``path`` (None: built at runtime) unless it lies inside the scope."""
        if path is None:
            self.hit(node, dynamic)
        elif not (path.startswith("/") or path == ".." or path.startswith("../")
                  or not self.target.in_scope(path)):
            return
        else:
            self.hit(node, outside.format(q=path))

    def on_list(self, node: ast.Call, func: str) -> None:
        arg = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg in ("top", "path", "pathname")), None)
        path = "." if arg is None else self.names.static_path(arg)
        listing = LISTS.format(q=func)
        self.check_path(node, None if path is None else _fixed_part(path), listing, listing)

    def on_method(self, node: ast.Call, func: ast.Attribute) -> None:
        method, receiver = func.attr, func.value
        if self.names.is_module(receiver):
            return  # a module's function (glob.glob, io.open): judged by its name
        if method in NAMESPACE_MUTATORS and self.namespace(receiver):
            self.hit(node, NAMESPACE.format(q=f"{method} on a module namespace"))
        elif method in READ_METHODS or (
                method == "open" and self.names.static_path(receiver) is not None):
            self.check_path(node, self.names.static_path(receiver), OPENS_DYNAMIC,
                            OPENS_OUTSIDE)
        elif method in LIST_METHODS:
            listing = LISTS.format(q=f".{method}()")
            self.check_path(node, self.names.static_path(receiver), listing, listing)

    def namespace(self, node: ast.AST) -> bool:
        """True when ``node`` is a module's namespace: ``globals()``, ``vars(m)``,
        ``m.__dict__`` (``m`` not the candidate's own object)."""
        if isinstance(node, ast.Call):
            func = self.names.qual(node.func)
            if func == "builtins.globals":
                return True
            if func == "builtins.vars" and node.args:
                return not (isinstance(node.args[0], ast.Name)
                            and node.args[0].id in ("self", "cls"))
        qual = self.names.qual(node)
        return qual is not None and qual.endswith(".__dict__") and not self.owns(qual)

    # --- stores ------------------------------------------------------------------

    def on_store(self, node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete) -> None:
        targets: list[ast.AST] = list(node.targets) if isinstance(
            node, ast.Assign | ast.Delete) else [node.target]
        for target in _flatten(targets):
            if isinstance(target, ast.Attribute):
                base = self.names.qual(target.value)
                if base is not None:
                    self.on_attribute_store(target, base, target.attr)
            elif isinstance(target, ast.Subscript) and self.namespace(target.value):
                self.hit(target, NAMESPACE.format(q="a write through its namespace"))

    def on_attribute_store(self, node: ast.AST, base: str, attr: str) -> None:
        """``base.attr`` assigned or deleted (by a statement or ``setattr``)."""
        qual = f"{base}.{attr}"
        if (meaning := _name_rule(qual)) is not None:
            self.hit(node, meaning.format(q=qual.removeprefix("builtins.")))
        if self.owns(base) or qual.startswith(SETTABLE_CONFIG):
            return
        self.hit(node, (PATCHES_OUTSIDE if self.outside(base) else PATCHES).format(q=qual))

    # --- strings -----------------------------------------------------------------

    def on_strings(self, node: ast.AST) -> None:
        target = self.target
        if isinstance(node, ast.keyword) and node.arg == target.metric:
            self.hit(node, _metric(target))  # dict(<metric>=...) prints it without a string
            return
        if (isinstance(node, ast.Name) and node.id == target.seed_env) or (
                isinstance(node, ast.Attribute) and node.attr == target.seed_env):
            self.hit(node, _seed(target))
            return
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, str) or isinstance(self.parent.get(node), ast.Expr):
                return
            text: str | None = node.value
        elif isinstance(node, ast.BinOp | ast.Call):
            text = constant_str(node)
        else:
            return
        if text is None:
            return
        metric = target.metric
        if text == metric or f'"{metric}"' in text or f"'{metric}'" in text:
            self.hit(node, _metric(target))
        if target.seed_env and re.search(rf"\b{re.escape(target.seed_env)}\b", text):
            self.hit(node, _seed(target))
        if target.names_outside_file(text):
            self.hit(node, "names a file outside the scope (it may read or patch it)")
        if text == "__main__" and not self.name_is_main(node):
            self.hit(node, MAIN)
        if DEVICE_PATH.match(text):
            self.hit(node, DEVICE.format(q=text[:40]))

    def name_is_main(self, node: ast.AST) -> bool:
        """``if __name__ == "__main__":``: everyday code, not a reach into __main__."""
        parent = self.parent.get(node)
        return isinstance(parent, ast.Compare) and any(
            isinstance(n, ast.Name) and n.id == "__name__"
            for n in [parent.left, *parent.comparators])


def _metric(target: Target) -> str:
    return f"names the metric {target.metric!r}, which only the evaluator should print"


def _seed(target: Target) -> str:
    return (f"reads the seed variable {target.seed_env}, which only the evaluator should "
            f"read")


def _name_rule(qual: str) -> str | None:
    if qual in NAME_RULES:
        return NAME_RULES[qual]
    return next((meaning for prefix, meaning in PREFIX_RULES if qual.startswith(prefix)), None)


def _on_super(node: ast.Attribute) -> bool:
    """``super().__setattr__(...)``: a class setting its own attribute."""
    value = node.value
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == "super")


def _fixed_part(pattern: str) -> str:
    """The directory a glob pattern is fixed to (``solver/data`` of ``solver/data/*.json``)."""
    cut = min((i for i in (pattern.find(c) for c in "*?[") if i != -1), default=-1)
    if cut == -1:
        return pattern
    return pattern[:cut].rsplit("/", 1)[0] if "/" in pattern[:cut] else "."


def _flatten(targets: Iterable[ast.AST]) -> Iterable[ast.AST]:
    for target in targets:
        if isinstance(target, ast.Tuple | ast.List):
            yield from _flatten(target.elts)
        elif isinstance(target, ast.Starred):
            yield from _flatten([target.value])
        else:
            yield target
