#!/usr/bin/env python3
"""Generate docs/theorems.md: each cited result -> the code that implements it -> the tests.

A result is "implemented by" the class or function whose body contains ``Ref("paper", "item")``
(or ``cite(...)``), or that a module-level ``REFERENCES = {"name": (Ref(...), ...)}`` names; it is
"checked by" every test that refers to that class or function by its qualified name: the test's
imports are resolved (``from puffer import capacity as C`` ... ``C.compose_parallel``), re-exports
followed to where the object is defined, and helpers and fixtures of the test file that the test
uses are read with it. A function of the same bare name elsewhere (``accounting.compose_parallel``
for ``capacity.compose_parallel``) does not count. Tests are named ``path::function`` or
``path::Class::method``.

``--check`` regenerates in memory and fails if docs/theorems.md is stale, a result has no test, a
public module whose docstring cites a paper result carries no reference, or a result of the five
papers listed in scripts/paper_results.py is neither cited in the code nor accounted for: a
``command:`` entry must match a labelled output line of the paper command (a table row whose
first column names the result, e.g. ``Ex. IV.5`` for Example IV.5, ``Fig. 1a`` for Figure 1; the
commands run in ``--quick`` mode), a ``test:`` entry an existing test by its qualified name.
Run from the repository root: ``python scripts/theorems.py [--check]``.
"""
from __future__ import annotations

import ast
import functools
import importlib
import re
import subprocess
import sys
import types
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "python" / "puffer"
TESTS = ROOT / "tests"
OUT = ROOT / "docs" / "theorems.md"


def _papers() -> dict[str, str]:
    tree = ast.parse((PKG / "refs.py").read_text())
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Paper":
            args = [a.value for a in node.args[:5] if isinstance(a, ast.Constant)]
            out[args[0]] = f"{args[1]}: *{args[3]}* ({args[4]})"
    return out


def _refs_in(path: Path) -> list[tuple[str, str, str]]:
    """(paper, item, symbol) for every Ref/cite call with literal arguments."""
    mod = ".".join(path.relative_to(PKG.parent).with_suffix("").parts)
    mod = mod.removesuffix(".__init__")
    found = []

    def visit(node: ast.AST, stack: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, stack + [child.name])
                continue
            if isinstance(child, ast.Call):
                name = getattr(child.func, "id", None) or getattr(child.func, "attr", None)
                if name in ("Ref", "cite") and len(child.args) >= 2 and all(
                        isinstance(a, ast.Constant) and isinstance(a.value, str) for a in child.args[:2]):
                    sym = ".".join([mod] + stack[:1]) if stack else mod
                    found.append((child.args[0].value, child.args[1].value, sym))
            visit(child, stack)

    tree = ast.parse(path.read_text())
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in tree.body:   # REFERENCES = {"name": (Ref(...), ...)}: results implemented by module-level names
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "REFERENCES" for t in node.targets)
                and isinstance(node.value, ast.Dict)):
            for k, v in zip(node.value.keys, node.value.values):
                name = k.value if isinstance(k, ast.Constant) else None
                if name not in defined:
                    raise SystemExit(f"{path}: REFERENCES names {name!r}, which the module does not define")
                for call in ast.walk(v):
                    if isinstance(call, ast.Call) and getattr(call.func, "id", None) in ("Ref", "cite"):
                        found.append((call.args[0].value, call.args[1].value, f"{mod}.{name}"))
            continue
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            visit(node, [node.name])
        else:
            visit(node, [])
    return found


# A public module whose docstring cites a numbered result of a registered paper implements it and
# must carry the reference in code. Command-line front ends, plotting and re-exporting packages
# only point at results implemented elsewhere.
_RESULT = re.compile(r"\b(Thm|Theorem|Lemma|Prop|Cor|Corollary|Algorithm|Example|Table|Figures?|Def|Eq\.)\s*"
                     r"\(?[A-Z]?[IVX]*\.?\d")
_FRONT_ENDS = {"cli.py", "plot.py", "__init__.py", "__main__.py"}


def _uncited_modules() -> list[str]:
    authors = [p.split(" ")[0].split("-")[0] for p in _papers_short().values()]
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if path.name in _FRONT_ENDS or path.name == "refs.py" or any(part.startswith("_") for part in rel.parts):
            continue
        tree = ast.parse(path.read_text())
        doc = ast.get_docstring(tree) or ""
        if _RESULT.search(doc) and any(a in doc for a in authors) and not _refs_in(path):
            bad.append(str(rel))
    return bad


def _papers_short() -> dict[str, str]:
    tree = ast.parse((PKG / "refs.py").read_text())
    return {n.args[0].value: n.args[1].value for n in ast.walk(tree)
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Paper"}


class _Test:
    """One test: its qualified id and the qualified names (resolved, canonical) it refers to."""

    def __init__(self, tid: str, refs: set[str]) -> None:
        self.id, self.refs = tid, refs

    def checks(self, symbol: str) -> bool:
        return any(r == symbol or r.startswith(symbol + ".") for r in self.refs)


def _aliases(nodes: list[ast.stmt] | list[ast.AST]) -> dict[str, str]:
    """Local name -> dotted name, for the ``import`` statements among ``nodes`` (puffer's only)."""
    out: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "puffer":
                    out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "puffer":
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _names(fn: ast.AST, aliases: dict[str, str]) -> tuple[set[str], set[str]]:
    """(dotted puffer names the code refers to, bare names it calls or takes as arguments)."""
    local = {**aliases, **_aliases([n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))])}
    found: set[str] = set()
    bare: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute):
            chain = _dotted(node)
            if chain and chain[0] in local:
                found.add(".".join([local[chain[0]], *chain[1:]]))
        elif isinstance(node, ast.Name):
            if node.id in local:
                found.add(local[node.id])
            bare.add(node.id)
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        bare.update(a.arg for a in fn.args.args + fn.args.kwonlyargs)   # fixtures
    return found, bare


@functools.cache
def _canonical(name: str) -> str:
    """Where the object ``name`` (``puffer.capacity.compose_parallel``) is defined
    (``puffer.capacity.algebra.compose_parallel``); the name itself when it cannot be imported."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except Exception:   # noqa: BLE001 - not a module (or an optional extra that is missing)
            continue
        try:
            for a in parts[i:]:
                obj = getattr(obj, a)
        except Exception:   # noqa: BLE001 - an attribute made at run time: keep what resolved
            return name
        if isinstance(obj, types.ModuleType):
            return obj.__name__
        mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if isinstance(mod, str) and isinstance(qual, str) and mod.startswith("puffer"):
            return f"{mod}.{qual}"
        return name
    return name


def _closure(node: ast.AST, aliases: dict[str, str], helpers: dict[str, ast.AST]) -> set[str]:
    """The dotted names ``node`` refers to, with those of the helpers and fixtures it uses."""
    found, _ = _names(node, aliases)
    seen: set[str] = set()
    todo = [node]
    while todo:
        names, bare = _names(todo.pop(), aliases)
        found |= names
        for b in bare - seen:
            h = helpers.get(b)
            if h is not None and h is not node:
                seen.add(b)
                todo.append(h)
    return found


def _tests(root: Path | None = None) -> list[_Test]:
    """Every test function (``path::name``) and test method (``path::Class::name``) with the
    qualified names it refers to, through its file's helpers and fixtures (conftest.py included)."""
    root = root or TESTS   # names resolve through the installed puffer (a fresh clone's source tree has no core)
    out = []
    for path in sorted(root.rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        aliases = _aliases(tree.body)
        helpers: dict[str, ast.AST] = {}
        for folder in reversed([path.parent, *path.parent.parents]):    # conftest.py fixtures, nearest last
            cf = folder / "conftest.py"
            if str(folder).startswith(str(root)) and cf.is_file():
                ct = ast.parse(cf.read_text())
                aliases = {**_aliases(ct.body), **aliases}
                helpers.update({n.name: n for n in ct.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))})
        helpers.update({n.name: n for n in tree.body
                        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))})
        rel = path.relative_to(ROOT)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                found = _closure(node, aliases, helpers)
                out.append(_Test(f"{rel}::{node.name}", {_canonical(r) for r in found}))
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                for m in node.body:
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test"):
                        found = _closure(m, aliases, helpers) | _names(node, aliases)[0]
                        out.append(_Test(f"{rel}::{node.name}::{m.name}", {_canonical(r) for r in found}))
    return out


def _key(item: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", item))


# How a paper command labels a result in the first column of its tables.
_KINDS = {"Example": r"(?:Example|Ex\.)", "Figure": r"(?:Figures?|Figs?\.)", "Table": r"(?:Tables?|Tab\.)",
          "Theorem": r"(?:Theorem|Thm\.?)", "Thm": r"(?:Theorem|Thm\.?)", "Corollary": r"(?:Corollary|Cor\.?)",
          "Cor": r"(?:Corollary|Cor\.?)", "Lemma": r"Lemma", "Proposition": r"(?:Proposition|Prop\.?)",
          "Prop": r"(?:Proposition|Prop\.?)", "Eq.": r"(?:Eq\.|Equation)", "Section": r"(?:Section|Sec\.)"}


def _labels(cell: str) -> list[tuple[str, str]]:
    """(kind, number) of each result a first-column cell names: ``Ex. IV.9/IV.14`` names
    (Example, IV.9) and (Example, IV.14); ``Fig. 1a`` names (Figure, 1a)."""
    out: list[tuple[str, str]] = []
    kind = None
    for piece in re.split(r"\s*[/,]\s*", cell.strip()):
        m = re.fullmatch(r"(?:(\S+?\.?)\s+)?([A-Z]*\.?[0-9IVX][0-9A-Za-z.\-]*)", piece)
        if not m:
            continue
        word = m.group(1)
        if word:
            kind = next((k for k, rx in _KINDS.items() if re.fullmatch(rx, word)), None)
        if kind is not None:
            out.append((_KIND_OF.get(kind, kind), m.group(2).rstrip(".")))
    return out


_KIND_OF = {"Thm": "Theorem", "Cor": "Corollary", "Prop": "Proposition"}


def _labelled(output: str) -> set[tuple[str, str]]:
    """The results a command's output labels: the first column of every table row (a table is a
    header line, a line of dashes and its rows; a row's continuation lines have an empty first column)."""
    found: set[tuple[str, str]] = set()
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if not (line.strip() and set(line.replace(" ", "")) == {"-"} and i > 0):
            continue
        for row in lines[i + 1:]:
            if not row.strip():
                break
            if not row[0].isspace():        # a continuation line starts blank
                found.update(_labels(re.split(r"\s{2,}", row)[0]))
    return found


def _item_label(item: str) -> tuple[str, str]:
    kind, _, number = item.partition(" ")
    return (_KIND_OF.get(kind, {"Figures": "Figure", "Tables": "Table", "Eq": "Eq."}.get(kind, kind)), number)


def command_problems(item: str, output: str) -> list[str]:
    """Why ``output`` (a paper command's) does not reproduce ``item``: empty when a table row's
    first column names it (a figure also by one of its panels: Figure 1 by ``Fig. 1a``)."""
    kind, number = _item_label(item)
    for k, n in _labelled(output):
        if k == kind and (n == number or (kind == "Figure" and re.fullmatch(re.escape(number) + r"[a-z]", n))):
            return []
    return [f"no table row of its output is labelled {item!r}"]


def run_commands(scripts: set[Path]) -> dict[Path, str]:
    """The ``--quick`` output of each paper command (run side by side)."""
    # the installed puffer (the source tree has no compiled core on a fresh clone)
    procs = {p: subprocess.Popen([sys.executable, str(p), "--quick"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, cwd=ROOT) for p in sorted(scripts) if p.is_file()}
    out = {}
    for p, proc in procs.items():
        stdout, stderr = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"{p.relative_to(ROOT)} --quick failed ({proc.returncode}):\n{stderr[-2000:]}")
        out[p] = stdout
    return out


def _catalog(refs: dict[tuple[str, str], set[str]], tests: list[_Test],
             outputs: dict[Path, str] | None = None) -> tuple[dict, list[str]]:
    """The five papers' results not cited in code: (paper -> [(item, how)]), and the problems.
    ``outputs``: the paper commands' outputs (None: run them; {}: skip the command entries)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from paper_results import RESULTS
    test_ids = {t.id for t in tests}
    other: dict[str, list[tuple[str, str]]] = defaultdict(list)
    problems = []
    pending = [(p, i, h) for p, items in RESULTS.items() for i, h in items.items() if (p, i) not in refs]
    scripts = {ROOT / h.split(":", 1)[1] for _, _, h in pending if h and h.startswith("command:")}
    if outputs is None:
        outputs = run_commands(scripts)
    for paper, item, how in pending:
        if how is None:
            problems.append(f"{paper} {item}: computational, but no code cites it (Ref / REFERENCES)")
            continue
        if how.startswith("command:"):
            script = ROOT / how.split(":", 1)[1]
            if not script.is_file():
                problems.append(f"{paper} {item}: {script.relative_to(ROOT)} does not exist")
            elif script in outputs:
                problems += [f"{paper} {item}: {script.relative_to(ROOT)}: {p}"
                             for p in command_problems(item, outputs[script])]
        elif how.startswith("test:") and how.split(":", 1)[1] not in test_ids:
            problems.append(f"{paper} {item}: no test {how.split(':', 1)[1]}")
        other[paper].append((item, how))
    return other, problems


def generate(outputs: dict[Path, str] | None = None) -> tuple[str, list[str]]:
    refs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "refs.py":
            continue
        for paper, item, sym in _refs_in(path):
            refs[(paper, item)].add(sym)
    tests = _tests()
    papers = _papers()
    other, problems = _catalog(refs, tests, outputs)
    problems += [f"{m}: its docstring cites a paper result but the module carries no Ref / REFERENCES"
                 for m in _uncited_modules()]
    lines = ["# Theorems → code → tests", "",
             "Generated by `python scripts/theorems.py`; CI fails when this file is stale or a cited",
             "result has no test. *Implemented by*: the class or function whose code cites the result",
             "(`puffer.refs.Ref`); *checked by*: the tests that refer to it by its qualified name (imports",
             "resolved, re-exports followed).", ""]
    untested = []
    for key in sorted({p for p, _ in refs}):
        lines += [f"## {papers.get(key, key)}", "", "| result | implemented by | checked by |", "|---|---|---|"]
        for (p, item) in sorted((k for k in refs if k[0] == key), key=lambda k: _key(k[1])):
            syms = sorted(refs[(p, item)])
            hits = sorted({t.id for t in tests for sym in syms if t.checks(sym)})
            if not hits:
                untested.append(f"{p} {item} ({', '.join(syms)})")
            shown = ", ".join(f"`{h}`" for h in hits[:4]) + (f" (+{len(hits) - 4} more)" if len(hits) > 4 else "")
            lines.append(f"| {item} | {', '.join(f'`{s}`' for s in syms)} | {shown or '**none**'} |")
        lines.append("")
        if key in other:
            lines += ["Results of this paper without code of their own:", "", "| result | where / why |", "|---|---|"]
            for item, how in sorted(other[key], key=lambda r: _key(r[0])):
                if how.startswith("command:"):
                    how = f"reproduced by `python {how.split(':', 1)[1]}` (tested by `tests/test_papers.py`)"
                elif how.startswith("test:"):
                    how = f"worked example checked by `{how.split(':', 1)[1]}`"
                elif how.startswith("gap:"):
                    how = "**not implemented**:" + how[4:]
                else:
                    how = "not computational: " + how
                lines.append(f"| {item} | {how} |")
            lines.append("")
    return "\n".join(lines), untested + problems


def main(argv: list[str]) -> int:
    text, untested = generate()
    if "--check" in argv:
        ok = True
        if not OUT.exists() or OUT.read_text() != text:
            print("docs/theorems.md is stale: run `python scripts/theorems.py` and commit it", file=sys.stderr)
            ok = False
        if untested:
            print("cited results without a test, or map problems:\n  " + "\n  ".join(untested), file=sys.stderr)
            ok = False
        return 0 if ok else 1
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}" + (f"; {len(untested)} results without a test" if untested else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
