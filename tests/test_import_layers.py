"""Imports inside python/puffer run one way (issue 42 §7): no module reaches, through any chain of
imports, a module that imports it back. Generalises the publishing layers' order test
(tests/prod/test_prod_publish.py::test_imports_run_one_way) from puffer.publish to the whole package.

Oracle: the modules' own source. The graph is read with ast, one node per module; a circle is a
strongly connected component of more than one module (Tarjan's algorithm), so a failure names every
module of each circle and the edges (file:line) that close it.

What counts as an import:

- every ``import`` / ``from ... import`` statement, at module level AND inside functions. The
  publishing layers' test counts imports inside functions too, and all three circles of issue 42
  were closed by imports inside functions: a deferred import hides the circle from the interpreter
  (no partial-module error), not from the reader, and the layers still run both ways.
- not what sits under ``if TYPE_CHECKING:`` (never executed; annotations only).
- ``from pkg import name`` where ``name`` is re-exported by ``pkg/__init__.py`` counts as an import of
  the module that defines ``name`` (the facade is followed), so a facade hides no edge.
- an import of the module's own ancestor package (``from . import markov_chain`` in
  ``puffer.models.theta``, ``markov_chain`` defined in ``puffer/models/__init__.py``) does not count:
  Python runs a package's ``__init__`` before any of its submodules, so such an edge orders nothing
  the import system does not already order, and a package whose ``__init__`` holds code and
  re-exports a submodule would otherwise always be a circle. A name the ancestor only re-exports is
  followed to its module like any other (the facade rule), so siblings cannot hide behind it.
- ``puffer/__init__.py`` is a lazy PEP 562 facade: it imports nothing under puffer at import time
  (checked below), so importing a name from ``puffer`` follows the facade's ``_LAZY`` table.
"""
from __future__ import annotations

import ast
import os
from collections.abc import Iterator

import puffer

ROOT = os.path.dirname(puffer.__file__)


def _modules() -> dict[str, tuple[str | None, bool]]:
    """Dotted name -> (path of the .py file or None for a compiled module, is a package)."""
    out: dict[str, tuple[str | None, bool]] = {}
    base = os.path.dirname(ROOT)
    for d, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith((".py", ".so", ".pyi")):
                continue
            name = os.path.relpath(os.path.join(d, f), base).split(".")[0].replace(os.sep, ".")
            if f.endswith(".py"):
                is_pkg = name.endswith(".__init__")
                out[name.removesuffix(".__init__")] = (os.path.join(d, f), is_pkg)
            else:
                out.setdefault(name.removesuffix(".__init__"), (None, False))
    return out


MODULES = _modules()


def _executed(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of ``body`` except what sits under ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _executed(node.orelse)
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            sub = getattr(node, field, None)
            if isinstance(sub, list):
                yield from _executed([s for s in sub if isinstance(s, (ast.stmt, ast.excepthandler))])
        if isinstance(node, ast.excepthandler):
            yield from _executed(node.body)


def _owner(name: str) -> str | None:
    """The longest puffer module that ``name`` (a dotted path) names or lies inside."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _raw_imports(module: str) -> list[tuple[str, str | None, int, str | None]]:
    """(imported module, imported attribute or None, line, bound name) for each import executed by
    ``module``."""
    path, is_pkg = MODULES[module]
    if path is None:
        return []
    package = module if is_pkg else module.rpartition(".")[0]
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    out: list[tuple[str, str | None, int, str | None]] = []
    for node in _executed(tree.body):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                src = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            for alias in node.names:
                out.append((src, alias.name, node.lineno, alias.asname or alias.name))
        elif isinstance(node, ast.Import):
            out.extend((alias.name, None, node.lineno, None) for alias in node.names)
    return out


def _facade(package: str) -> dict[str, tuple[str, str | None]]:
    """Names that ``package/__init__`` re-exports -> (the module they come from, their name there)."""
    if package == "puffer":  # the lazy PEP 562 table
        tree = ast.parse(open(MODULES["puffer"][0], encoding="utf-8").read())  # type: ignore[arg-type]
        table = next(n.value for n in tree.body if isinstance(n, ast.AnnAssign)
                     and isinstance(n.target, ast.Name) and n.target.id == "_LAZY")
        return {k: ("puffer" + v[0], v[1]) for k, v in ast.literal_eval(table).items()}  # type: ignore[arg-type]
    return {bound: (src, attr) for src, attr, _, bound in _raw_imports(package)
            if bound is not None and src != package}


def _resolve(src: str, attr: str | None, seen: frozenset[str] = frozenset()) -> str | None:
    if attr is not None and f"{src}.{attr}" in MODULES:
        return f"{src}.{attr}"
    owner = _owner(src)
    if owner is None or attr is None or not MODULES[owner][1] or owner != src or owner in seen:
        return owner
    facade = _facade(owner)
    if attr in facade:
        return _resolve(*facade[attr], seen=seen | {owner})
    return owner


def import_graph() -> dict[str, dict[str, list[int]]]:
    """module -> {imported puffer module: [lines]} for every module of python/puffer."""
    graph: dict[str, dict[str, list[int]]] = {m: {} for m in MODULES}
    for module in MODULES:
        for src, attr, line, _ in _raw_imports(module):
            target = _resolve(src, attr)
            if target is not None and target != module and not module.startswith(target + "."):
                graph[module].setdefault(target, []).append(line)
    return graph


def circles(graph: dict[str, dict[str, list[int]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def _describe(graph: dict[str, dict[str, list[int]]], comp: list[str]) -> str:
    lines = [f"circle of {len(comp)} modules:"]
    for a in comp:
        for b in sorted(set(graph[a]) & set(comp)):
            lines.append(f"  {a} -> {b} (line {', '.join(map(str, sorted(set(graph[a][b]))))})")
    return "\n".join(lines)


def test_no_import_circle_inside_puffer():
    graph = import_graph()
    found = circles(graph)
    assert not found, "\n".join(_describe(graph, c) for c in found)


def test_the_top_level_facade_imports_nothing_at_import_time():
    # the premise of reading puffer/__init__ through its _LAZY table
    assert not [src for src, _, _, _ in _raw_imports("puffer")
                if (_owner(src) or "").startswith("puffer.") and src not in ("puffer._version", "puffer.errors")]


def test_the_circle_finder_finds_circles():
    # Tarjan on hand-made graphs: a 3-cycle with a tail, a self-contained pair, a DAG
    g = {"a": {"b": [1]}, "b": {"c": [1]}, "c": {"a": [1], "d": [1]}, "d": {}, "e": {"f": [1]}, "f": {"e": [1]}}
    assert sorted(circles(g)) == [["a", "b", "c"], ["e", "f"]]
    assert circles({"a": {"b": [1]}, "b": {"c": [1]}, "c": {}, "d": {"a": [1], "c": [1]}}) == []


def test_the_graph_sees_imports_inside_functions_and_through_facades():
    graph = import_graph()
    # a deferred import (inside a function) of the CLI's config parser
    assert "puffer.config" in graph["puffer.cli"] or "puffer.config.build" in graph["puffer.cli"]
    # `from .guarantees import PP` in a module is an import of the module defining PP
    assert any(t.startswith("puffer.guarantees.") for t in graph["puffer.mechanisms._base"])
    assert not any(t == "puffer" for deps in graph.values() for t in deps)


def test_the_names_that_moved_are_still_where_users_import_them():
    import pickle

    import puffer.cli
    import puffer.config
    import puffer.config.build
    import puffer.mechanisms.registry
    import puffer.sampling
    from puffer import _streams
    from puffer.guarantees import dp
    from puffer.noise import Gaussian, _base

    # the registry of mechanism builders lives in puffer.mechanisms; the config re-exports it
    fw = puffer.models.correlated_pair(0.5, 0.3)
    target = {"eps": 1.0, "delta": 1e-5, "alpha": 2.0}
    rows = [label for label, _ in puffer.mechanisms.registry.build_mechanisms(fw, target)]
    assert rows == [label for label, _ in puffer.config.build_mechanisms(fw, target)]
    assert rows == [label for label, _ in puffer.config.build.build_mechanisms(fw, target)]
    assert puffer.config.markov_quilt_mechanisms(fw, target) == []
    assert puffer.cli.DEMO is puffer.config.schema.DEMO
    # the streams: one class, shown, documented and pickled as puffer.sampling's
    assert puffer.sampling.KeyedStream is _streams.KeyedStream and puffer.sampling.Stream is _streams.Stream
    assert puffer.sampling.KeyedStream.__module__ == "puffer.sampling"
    s = puffer.sampling.KeyedStream(bytes(range(32)), word=3)
    s.position = 5
    assert pickle.loads(pickle.dumps(s)) == s
    assert b"puffer.sampling" in pickle.dumps(s) and b"_streams" not in pickle.dumps(s)
    assert puffer.sampling.noise_spec(("laplace", {"b": 1.0})) == ("laplace", {"b": 1.0})
    assert puffer.sampling._threads(None) == 0
    # helpers other modules import from their old homes
    assert dp._mul_up is puffer.guarantees._base._mul_up and callable(_base._generic_max_shift)
    # the methods that forward to the layers above the noise base class
    g = Gaussian(1.0)
    assert g.iid(3).d == 3 and g.privacy_profile(1.0, 1.0) == puffer.noise.profile.delta_at(g, 1.0, 1.0)
    assert g.hockey_stick(0.5, 1.0) == puffer.noise.profile.hockey_stick(g, 0.5, 1.0)
    assert g.calibrate(eps=1.0, delta=1e-5, sensitivity=1.0) == \
        puffer.noise.profile.calibrate_eps_delta(g, eps=1.0, delta=1e-5, sensitivity=1.0)[0]
    assert g.iid(2).privacy_profile(1.0, 1.0) == puffer.noise.profile.delta_at(g.iid(2), 1.0, 1.0)
