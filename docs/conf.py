"""Sphinx configuration of the puffer documentation site (built by ``bash scripts/docs.sh``)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The installed package is documented; a source checkout with a compiled core also works.
if os.environ.get("PUFFER_DOCS_SOURCE"):
    sys.path.insert(0, str(ROOT / "python"))

import puffer  # noqa: E402

project = "puffer"
author = "the puffer developers"
copyright = "2026, the puffer developers"
release = puffer.__version__
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",   # MathJax copied into _static (no CDN: the site works offline)
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "README.md", "**/README.md"]   # notes beside data files
html_theme = "furo"
html_title = f"puffer {release}"
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"
html_css_files = ["puffer.css"]        # a wider text column; outputs wrap (see the file)
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "force"          # every tutorial runs at each build: a wrong example fails it
nb_execution_raise_on_error = True
nb_execution_timeout = 300
nb_merge_streams = True
autosummary_generate = True
# Each object once, where it is defined; a class page shows every public member a user reaches on
# the class, inherited ones included (release(), noise, group come from a private base class),
# except what builtins give every object, exception or float.
autodoc_default_options = {
    "members": True, "undoc-members": True, "ignore-module-all": True,
    "inherited-members": "object,ABC,BaseException,Exception,ValueError,TypeError,UserWarning,Warning,"
                         "ArithmeticError,OSError,float,tuple,dict,Enum",
}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"   # a parameter is listed with what it is
napoleon_google_docstring = False       # "Parameters / Returns" sections, numpy style
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_param = False            # the types a docstring states are shown as written (not cross-referenced)
autoclass_content = "class"
nitpicky = False


# --- docstrings ---------------------------------------------------------------------------
# puffer's docstrings are reStructuredText that also reads well in help(): numpy-style sections,
# ``literals``, :class:`roles`, and |x| for an absolute value. A bare '|' would start a reST
# substitution, so it is escaped (outside inline literals and doctests); everything else is parsed
# as written, and a docstring that is not valid reST fails the build (-W) with its name.
import re as _re  # noqa: E402

_PIPE = _re.compile(r"(?<!\\)\|")


def _escape_pipes(lines: list[str]) -> list[str]:
    out, block = [], None     # block: the indentation of the "::" / directive line whose content follows
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if block is not None and line.strip() and indent <= block:
            block = None
        if block is not None or line.lstrip().startswith((">>>", "...")):
            out.append(line)      # literal blocks, directive contents (math) and doctests as written
            continue
        if line.rstrip().endswith("::"):
            block = indent
        parts = line.split("``")
        for i in range(0, len(parts), 2):   # outside inline literals only
            parts[i] = _PIPE.sub(r"\\|", parts[i])
        out.append("``".join(parts))
    return out


def _process_docstring(app, what, name, obj, options, lines):  # noqa: ANN001
    lines[:] = _escape_pipes(lines)


# --- cross-references --------------------------------------------------------------------
# A type annotation names a class as the module sees it (``Release``, ``Gaussian``); where several
# documented objects share that short name, the link goes to the one the referring module itself
# binds to the name, else to the one nearest to it in the package (longest common module prefix).
# Only a tie is reported (a warning, an error under -W).
import ast  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import inspect  # noqa: E402

from sphinx.domains.python import PythonDomain  # noqa: E402


def _bound(modname: str, name: str) -> str | None:
    """The qualified name of what ``name`` means in module ``modname``: its value at run time, or
    an import the module makes for type checking only (``if TYPE_CHECKING: from ..noise import X``)."""
    head, *rest = name.split(".")
    try:
        mod = importlib.import_module(modname)
    except ImportError:
        return None
    obj = getattr(mod, head, None)
    if obj is None:
        try:
            tree = ast.parse(inspect.getsource(mod))
        except (OSError, TypeError, SyntaxError):
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == head for a in node.names):
                alias = next(a for a in node.names if (a.asname or a.name) == head)
                base = importlib.util.resolve_name("." * node.level + (node.module or ""),
                                                   modname if hasattr(mod, "__path__") else modname.rpartition(".")[0])
                try:
                    obj = getattr(importlib.import_module(base), alias.name, None)
                except ImportError:
                    obj = None
                break
    for part in rest:
        obj = getattr(obj, part, None)
    if obj is None or not hasattr(obj, "__qualname__"):
        return None
    return f"{obj.__module__}.{obj.__qualname__}"


class _NearestPythonDomain(PythonDomain):
    def find_obj(self, env, modname, classname, name, type, searchmode=0):  # noqa: ANN001, A002
        matches = super().find_obj(env, modname, classname, name, type, searchmode)
        if len(matches) < 2 or not modname:
            return matches
        full = _bound(modname, name)
        same = [m for m in matches if m[0] == full]
        if len(same) == 1:
            return same

        def shared(m: tuple) -> int:
            a, b = m[0].split("."), modname.split(".")
            n = 0
            while n < min(len(a), len(b)) and a[n] == b[n]:
                n += 1
            return n

        best = max(shared(m) for m in matches)
        nearest = [m for m in matches if shared(m) == best]
        return nearest if len(nearest) == 1 else matches


def setup(app):  # noqa: ANN001
    app.connect("autodoc-process-docstring", _process_docstring)
    app.add_domain(_NearestPythonDomain, override=True)
