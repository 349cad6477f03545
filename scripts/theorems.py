#!/usr/bin/env python3
"""Generate docs/theorems.md: each cited result -> the code that implements it -> the tests.

A result is "implemented by" the class or function whose body contains ``Ref("paper", "item")``
(or ``cite(...)``), or that a module-level ``REFERENCES = {"name": (Ref(...), ...)}`` names; it is
"checked by" every test function that names that class or function. ``--check`` regenerates in
memory and fails if docs/theorems.md is stale, a result has no test, a public module whose
docstring cites a paper result carries no reference, or a result of the five papers listed in
scripts/paper_results.py is neither cited in the code nor accounted for (paper command, test, gap,
or not computational).
Run from the repository root: ``python scripts/theorems.py [--check]``.
"""
from __future__ import annotations

import ast
import re
import sys
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


def _tests() -> list[tuple[str, str]]:
    """(test id, source) for every test function."""
    out = []
    for path in sorted(TESTS.rglob("test_*.py")):
        src = path.read_text()
        tree = ast.parse(src)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                out.append((f"{path.relative_to(ROOT)}::{node.name}", ast.get_source_segment(src, node) or ""))
    return out


def _key(item: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", item))


def _catalog(refs: dict[tuple[str, str], set[str]], tests: list[tuple[str, str]]) -> tuple[dict, list[str]]:
    """The five papers' results not cited in code: (paper -> [(item, how)]), and the problems."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from paper_results import RESULTS
    test_ids = {t for t, _ in tests}
    other: dict[str, list[tuple[str, str]]] = defaultdict(list)
    problems = []
    for paper, items in RESULTS.items():
        for item, how in items.items():
            if (paper, item) in refs:
                continue
            if how is None:
                problems.append(f"{paper} {item}: computational, but no code cites it (Ref / REFERENCES)")
                continue
            if how.startswith("command:"):
                script = ROOT / how.split(":", 1)[1]
                number = item.split(" ", 1)[1]
                if not script.is_file() or number not in script.read_text():
                    problems.append(f"{paper} {item}: {script.relative_to(ROOT)} does not reproduce it")
            elif how.startswith("test:") and how.split(":", 1)[1] not in test_ids:
                problems.append(f"{paper} {item}: no test {how.split(':', 1)[1]}")
            other[paper].append((item, how))
    return other, problems


def generate() -> tuple[str, list[str]]:
    refs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "refs.py":
            continue
        for paper, item, sym in _refs_in(path):
            refs[(paper, item)].add(sym)
    tests = _tests()
    papers = _papers()
    other, problems = _catalog(refs, tests)
    problems += [f"{m}: its docstring cites a paper result but the module carries no Ref / REFERENCES"
                 for m in _uncited_modules()]
    lines = ["# Theorems → code → tests", "",
             "Generated by `python scripts/theorems.py`; CI fails when this file is stale or a cited",
             "result has no test. *Implemented by*: the class or function whose code cites the result",
             "(`puffer.refs.Ref`); *checked by*: the tests that exercise it.", ""]
    untested = []
    for key in sorted({p for p, _ in refs}):
        lines += [f"## {papers.get(key, key)}", "", "| result | implemented by | checked by |", "|---|---|---|"]
        for (p, item) in sorted((k for k in refs if k[0] == key), key=lambda k: _key(k[1])):
            syms = sorted(refs[(p, item)])
            names = {s.split(".")[-1] for s in syms}
            hits = sorted({t for t, src in tests for n in names if re.search(rf"\b{re.escape(n)}\b", src)})
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
