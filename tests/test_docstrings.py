"""The docstrings the documentation site is built from (docs/conf.py): every public module opens
with a one-line summary (the API index shows it), and every public docstring is valid
reStructuredText once napoleon has read its numpy sections, so `bash scripts/docs.sh` (warnings as
errors) does not fail on a docstring written since. A slip is reported here, in the plain suite,
with the object's name and docutils' message."""
from __future__ import annotations

import importlib
import inspect
import io
import pkgutil
import re
import sys
from pathlib import Path

import pytest

import puffer

ROOT = Path(__file__).resolve().parent.parent
sphinx = pytest.importorskip("sphinx", reason="needs the docs extra (sphinx)")


def _conf():
    """docs/conf.py's docstring processing (the pipe escaping), without building anything."""
    src = (ROOT / "docs" / "conf.py").read_text()
    ns: dict = {}
    exec(compile(src[src.index("import re as _re"):src.index("def _process_docstring")], "conf.py", "exec"), ns)
    return ns["_escape_pipes"]


def _modules() -> list[str]:
    return ["puffer"] + sorted(m.name for m in pkgutil.walk_packages(puffer.__path__, "puffer.")
                               if not any(p.startswith("_") for p in m.name.split(".")))


def _importable(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:          # an optional extra that is not installed (pyspark, dask)
        return None


pytestmark = pytest.mark.skipif(not (ROOT / "docs" / "conf.py").is_file(), reason="needs the source checkout")


def test_every_public_module_opens_with_a_one_line_summary():
    bad = []
    for name in _modules():
        mod = _importable(name)
        if mod is None:
            continue
        lines = inspect.cleandoc(mod.__doc__ or "").splitlines()
        first = lines[0] if lines else ""
        if (not first.endswith(".") or len(first) > 110 or (len(lines) > 1 and lines[1].strip())
                or re.search(r"\b(et al|e\.g|i\.e|cf)\.\s", first)):
            bad.append(f"{name}: {first!r}")
    assert not bad, "a module's first line is its summary in the API index: one sentence ending " \
                    "with a period, <= 110 characters, then a blank line\n" + "\n".join(bad)


def test_every_public_docstring_is_valid_restructuredtext():
    from docutils.core import publish_doctree
    from docutils.utils import Reporter
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import NumpyDocstring

    escape = _conf()
    config = Config(napoleon_google_docstring=False, napoleon_numpy_docstring=True, napoleon_use_param=False,
                    napoleon_use_rtype=False)
    role = re.compile(r":(?:py:)?(?:mod|func|class|meth|data|attr|obj|exc|ref|doc|math|any):`([^`]*)`")
    seen, bad = set(), []
    for name in _modules():
        mod = _importable(name)
        if mod is None:
            continue
        objs = [(name, mod, "module")]
        for k, v in vars(mod).items():
            if k.startswith("_") or getattr(v, "__module__", None) != name:
                continue
            if inspect.isclass(v) or inspect.isfunction(v):
                objs.append((f"{name}.{k}", v, "class" if inspect.isclass(v) else "function"))
                if inspect.isclass(v):
                    for a, b in vars(v).items():
                        f = b.fget if isinstance(b, property) else getattr(b, "__func__", b)
                        if not a.startswith("_") and (callable(f) or isinstance(b, property)):
                            objs.append((f"{name}.{k}.{a}", f, "method"))
        for qual, obj, what in objs:
            doc = inspect.getdoc(obj) if what != "module" else inspect.cleandoc(obj.__doc__ or "")
            if not doc or id(obj) in seen:
                continue
            seen.add(id(obj))
            lines = NumpyDocstring(doc, config, what=what).lines()
            text = role.sub(r"``\1``", "\n".join(escape(lines)))   # Sphinx's roles, unknown to docutils
            stream = io.StringIO()
            publish_doctree(text, settings_overrides={"warning_stream": stream, "report_level": Reporter.WARNING_LEVEL,
                                                      "halt_level": Reporter.SEVERE_LEVEL + 1})
            if stream.getvalue():
                bad.append(f"{qual}: {stream.getvalue().strip().splitlines()[0]}")
    assert len(seen) > 500
    assert not bad, "\n".join(bad)


if __name__ == "__main__":     # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
