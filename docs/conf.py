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
    "sphinx.ext.viewcode",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "README.md"]
html_theme = "furo"
html_title = f"puffer {release}"
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "force"          # every tutorial runs at each build: a wrong example fails it
nb_execution_raise_on_error = True
nb_execution_timeout = 300
nb_merge_streams = True
autosummary_generate = True
autodoc_default_options = {"members": True, "ignore-module-all": True}  # each object once, where defined
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autoclass_content = "class"
nitpicky = False


# --- docstrings ---------------------------------------------------------------------------
# puffer's docstrings are written as plain text for help() (|x| is an absolute value, indented
# continuation lines, ...), not as reStructuredText. Each one is rendered as reST when it parses
# cleanly once bare '|' are escaped, and verbatim (a literal block) otherwise, so the reference
# shows every docstring exactly and the build stays free of warnings.
import io as _io  # noqa: E402
import re as _re  # noqa: E402

from docutils.core import publish_doctree  # noqa: E402
from docutils.utils import Reporter  # noqa: E402

_PIPE = _re.compile(r"(?<!\\)\|")


def _escape_pipes(line: str) -> str:
    if line.lstrip().startswith((">>>", "...")):
        return line
    parts = line.split("``")
    for i in range(0, len(parts), 2):   # outside inline literals only
        parts[i] = _PIPE.sub(r"\\|", parts[i])
    return "``".join(parts)


_ROLE = _re.compile(r":(?:mod|func|class|meth|data|attr|obj|exc):`")


def _clean(lines: list[str]) -> bool:
    text = _ROLE.sub("``", "\n".join(lines))     # Sphinx roles are unknown to plain docutils
    stream = _io.StringIO()
    try:
        publish_doctree(text, settings_overrides={"warning_stream": stream,
                                                  "report_level": Reporter.WARNING_LEVEL,
                                                  "halt_level": Reporter.SEVERE_LEVEL + 1})
    except Exception:
        return False
    return not stream.getvalue()


def _process_docstring(app, what, name, obj, options, lines):  # noqa: ANN001
    if not lines:
        return
    escaped = [_escape_pipes(line) for line in lines]
    if _clean(escaped):
        lines[:] = escaped
        return
    lines[:] = ["::", ""] + ["    " + line for line in lines] + [""]


def setup(app):  # noqa: ANN001
    app.connect("autodoc-process-docstring", _process_docstring)
