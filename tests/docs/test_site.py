"""The built documentation site in a real browser (Debian's headless chromium over the DevTools
protocol): every page renders with content, no page logs a console error, an exception or a failed
load, no internal link is broken (target file and #anchor exist), and the search finds pages.
Run by scripts/docs.sh after the build (PUFFER_DOCS_SITE=build/docs)."""
from __future__ import annotations

import functools
import http.server
import importlib
import inspect
import os
import threading
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from cdp_client import Browser, find_chromium

SITE = Path(os.environ.get("PUFFER_DOCS_SITE", "build/docs")).resolve()


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):  # noqa: ANN001
        for k, v in attrs:
            if k in ("id", "name") and v:
                self.ids.add(v)


@functools.cache
def _ids(path: Path) -> frozenset[str]:
    p = _Ids()
    p.feed(path.read_text(encoding="utf-8"))
    return frozenset(p.ids)


@pytest.fixture(scope="module")
def server():
    assert (SITE / "index.html").is_file(), f"no site at {SITE}: run scripts/docs.sh"
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    binary = find_chromium()
    assert binary, "chromium is not installed (scripts/setup.sh installs Debian's chromium)"
    b = Browser(binary)
    yield b
    b.close()


def _pages() -> list[str]:
    return sorted(str(p.relative_to(SITE)) for p in SITE.rglob("*.html")
                  if not str(p.relative_to(SITE)).startswith(("_static", "_sources")))


def test_site_has_the_pages():
    pages = set(_pages())
    for p in ("index.html", "getting-started.html", "concepts.html", "cookbook.html", "api.html",
              "theorems.html", "papers.html", "publishing.html", "search.html", "tutorials/household.html",
              "tutorials/accounting.html", "tutorials/partial.html", "tutorials/capacity.html", "tutorials/sgd.html"):
        assert p in pages, p
    assert any(p.startswith("api/puffer.mechanisms") for p in pages)


# What the reader sees, collected in one visit of every page at a laptop's window width (1280 px,
# where furo shows the navigation beside the content): the page's text and links, console errors,
# boxes that scroll sideways (a code cell or an output cut at the right edge), reST markup left
# raw in the text, empty summary cells of the API tables, parameters listed without a description.
WIDTH, HEIGHT = 1280, 2000
_FACTS_JS = r"""(() => {
    const main = document.querySelector('article') || document.querySelector('[role=main]') || document.body;
    const label = el => {
        const t = (el.innerText || '').trim().split('\n')[0];
        return el.tagName.toLowerCase() + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '')
            + ' "' + t.slice(0, 70) + '"';
    };
    const overflow = [];
    const box = main.getBoundingClientRect();
    for (const el of main.querySelectorAll('*')) {
        const cs = getComputedStyle(el);
        if (cs.display === 'none' || el.closest('.MathJax, mjx-container')) continue;
        const scrolls = ['auto', 'scroll'].includes(cs.overflowX) && el.scrollWidth > el.clientWidth + 1;
        const r = el.getBoundingClientRect();
        const sticksOut = r.width > 0 && r.right > box.right + 1 && !el.closest('.table-wrapper, .highlight');
        if (scrolls || (sticksOut && ['PRE', 'TABLE', 'IMG', 'DIV'].includes(el.tagName)))
            overflow.push(label(el) + ` (${el.scrollWidth} px of content in ${el.clientWidth} px)`);
    }
    const text = main.innerText;
    const raw = [];
    const re = /:(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc|ref|doc|term|math|any):`|``/g;
    let m;
    while ((m = re.exec(text)) !== null && raw.length < 5)
        raw.push(text.slice(Math.max(0, m.index - 40), m.index + 40).replace(/\s+/g, ' '));
    const summaries = [];
    const rows = main.querySelectorAll('table.autosummary tr').length;
    for (const row of main.querySelectorAll('table.autosummary tr')) {
        const cells = row.querySelectorAll('td');
        if (cells.length >= 2 && !cells[cells.length - 1].innerText.trim()) summaries.push(cells[0].innerText.trim());
    }
    const params = [];
    for (const dt of main.querySelectorAll('dl.field-list > dt')) {
        if (!/^(Parameters|Other Parameters|Keyword Arguments)/.test(dt.textContent.trim())) continue;
        const dd = dt.nextElementSibling;
        const items = dd.querySelectorAll(':scope > ul > li, :scope > p');
        for (const it of items) {
            const t = it.innerText.trim();
            if (!/\s[\u2013\u2014-]\s+\S/.test(t)) {
                const sig = dt.closest('dd') && dt.closest('dd').previousElementSibling;
                params.push((sig && sig.id ? sig.id : '?') + ': ' + t.slice(0, 60));
            }
        }
    }
    // per documented class, method and function: the names its Parameters list gives and the
    // ``literals`` its own text mentions (not those of the methods nested in a class)
    const sigs = {};
    for (const dl of main.querySelectorAll('dl.py.class, dl.py.method, dl.py.function')) {
        const dt = dl.querySelector(':scope > dt');
        if (!dt || !dt.id) continue;
        const mine = el => el.closest('dl.py') === dl;
        const names = [];
        for (const f of dl.querySelectorAll('dl.field-list > dt')) {
            if (!mine(f) || !/^(Parameters|Other Parameters|Keyword Arguments)/.test(f.textContent.trim())) continue;
            for (const it of f.nextElementSibling.querySelectorAll(':scope > ul > li, :scope > p')) {
                const strong = it.querySelector('strong');
                if (strong) names.push(...strong.innerText.split(/,\s*/).map(x => x.trim()));
            }
        }
        const literals = Array.from(dl.querySelectorAll(':scope > dd code')).filter(mine).map(c => c.innerText.trim());
        sigs[dt.id] = {names, literals};
    }
    return {title: document.title, text: text.trim().length, sigs,
            links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
            imgs: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
            overflow, raw, summaries, rows, params};
})()"""


# What sticks out of the WINDOW (not only the text column): the page wider than the window (it
# scrolls sideways: text and headings cut at the right edge) and the elements of the content
# whose right edge is past the window's, except inside a box that scrolls or clips sideways
# (a code block, a table wrapper: the reader scrolls those). At a laptop's width and a phone's.
WINDOWS = ((1280, 2000, False), (390, 844, True))
_WINDOW_JS = r"""(() => {
    const W = document.documentElement.clientWidth;
    const out = [];
    const page = Math.max(document.documentElement.scrollWidth, document.body.scrollWidth);
    if (page > W + 1) out.push(`the page is ${page} px wide in a ${W} px window`);
    const main = document.querySelector('article') || document.querySelector('[role=main]') || document.body;
    const clipped = el => {
        for (let a = el.parentElement; a && a !== document.body; a = a.parentElement)
            if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return true;
        return false;
    };
    for (const el of main.querySelectorAll('*')) {
        if (out.length >= 8) break;
        const cs = getComputedStyle(el);
        if (cs.display === 'none' || cs.visibility === 'hidden' || el.closest('.MathJax, mjx-container')) continue;
        const r = el.getBoundingClientRect();
        if (r.width > 0 && r.right > W + 1 && !clipped(el)) {
            const t = (el.innerText || '').trim().split('\n')[0].slice(0, 60);
            out.push(`${el.tagName.toLowerCase()} "${t}" ends at ${Math.round(r.right)} px`);
        }
    }
    return out;
})()"""


@pytest.fixture(scope="module")
def facts(server, browser) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for width, height, mobile in WINDOWS:
        browser.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                     mobile=mobile)
        for rel in _pages():
            browser.goto(server + rel)
            if width == WIDTH:
                info = browser.eval(_FACTS_JS)
                info["events"] = list(browser.events)
                out[rel] = {**info, "window": {}}
            out[rel]["window"][width] = browser.eval(_WINDOW_JS)
    return out


def _report(problems: list[str]) -> str:
    return "\n".join(problems[:400]) + (f"\n... {len(problems)} in all" if len(problems) > 60 else "")


def test_every_page_renders_without_errors_or_broken_links(server, facts):
    problems: list[str] = []
    checked_links = 0
    for rel, info in facts.items():
        if not info["title"] or (info["text"] < 20 and rel != "search.html"):   # results need a query
            problems.append(f"{rel}: empty page (title {info['title']!r}, {info['text']} chars)")
        for e in info["events"]:
            problems.append(f"{rel}: {e['kind']}: {e['text']} {e.get('url', '')}")
        for src in info["imgs"]:
            problems.append(f"{rel}: image not rendered: {src}")
        for href in info["links"]:
            u = urllib.parse.urlsplit(href)
            if not href.startswith(server):
                continue                       # external links are not fetched (no network in CI)
            checked_links += 1
            target = SITE / urllib.parse.unquote(u.path[len(urllib.parse.urlsplit(server).path):])
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{rel}: broken link {href}")
            elif u.fragment and target.suffix == ".html" and urllib.parse.unquote(u.fragment) not in _ids(target):
                problems.append(f"{rel}: broken anchor {href}")
    assert checked_links > 100
    assert not problems, _report(problems)


def _documentation(facts: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The pages a reader reads: not the highlighted source files behind the [source] links
    (``_modules/``), which show each file as written, long lines and ``markup`` included."""
    return {rel: info for rel, info in facts.items() if not rel.startswith("_modules/")}


def test_nothing_is_cut_at_the_right_edge(facts):
    """No code cell, output, table or literal block scrolls sideways or sticks out of the text
    column at 1280 px: what is cut off is what the reader misses (a std column, a refusal)."""
    problems = [f"{rel}: {o}" for rel, info in _documentation(facts).items() for o in info["overflow"]]
    assert not problems, _report(problems)


def test_nothing_sticks_out_of_the_window(facts):
    """At 1280 px (a laptop) and 390 px (a phone) no page is wider than the window and no element
    of the text ends past its right edge (outside a box that scrolls): the column test above
    compares elements with the text column, which can itself be wider than the window."""
    problems = [f"{rel} at {w} px: {o}" for rel, info in _documentation(facts).items()
                for w, found in info["window"].items() for o in found]
    assert not problems, _report(problems)


def test_no_raw_rest_markup_in_the_text(facts):
    """Docstrings render as reStructuredText: no visible :class:`...` roles or ``literals``."""
    problems = [f"{rel}: ...{r}..." for rel, info in _documentation(facts).items() for r in info["raw"]]
    assert not problems, _report(problems)


def test_every_summary_table_row_has_a_description(facts):
    """The API index and every module page's tables give each module, class and function a
    one-line description (the first line of its docstring)."""
    problems = [f"{rel}: {name} has an empty description" for rel, info in facts.items()
                for name in info["summaries"]]
    assert facts["api.html"]["rows"] >= 20, "the API index lists the public modules"
    assert not problems, _report(problems)


def test_every_listed_parameter_is_described(facts):
    """A parameter list never shows a name and a type without saying what the parameter is."""
    problems = [f"{rel}: {p}" for rel, info in facts.items() for p in info["params"]]
    assert not problems, _report(problems)


class _Classes(HTMLParser):
    """The ids of the classes documented on a page (``<dl class="py class"><dt id=...>``)."""

    def __init__(self) -> None:
        super().__init__()
        self.classes: list[str] = []
        self._next = False

    def handle_starttag(self, tag, attrs):  # noqa: ANN001
        a = dict(attrs)
        if tag == "dl" and "py" in (a.get("class") or "").split() and "class" in (a.get("class") or "").split():
            self._next = True
        elif tag == "dt" and self._next:
            self._next = False
            if a.get("id"):
                self.classes.append(a["id"])


def _resolve(qualname: str) -> Any:
    parts = qualname.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(qualname)


def _public_members(cls: type) -> set[str]:
    """The public methods, properties and annotated attributes a user reaches on ``cls``: its own
    and those it inherits from puffer classes (a private base's ``release`` included), not those
    of builtins (``Exception.args``, ``tuple.count``)."""
    names: set[str] = set()
    for base in cls.__mro__:
        if not base.__module__.startswith("puffer"):
            continue
        for name, value in vars(base).items():
            if name.startswith("_") or isinstance(value, type):
                continue
            if callable(value) or isinstance(value, (property, classmethod, staticmethod)):
                names.add(name)
        names.update(n for n in vars(base).get("__annotations__", {}) if not n.startswith("_"))
    return names


def test_every_public_member_is_on_its_class_page():
    """Each documented class shows every public method and attribute a user can reach on it,
    including those it inherits from a private base class (``release``, ``noise``, ``group``)."""
    problems = []
    classes = 0
    for page in sorted((SITE / "api").glob("*.html")):
        parser = _Classes()
        parser.feed(page.read_text(encoding="utf-8"))
        ids = _ids(page)
        for qual in parser.classes:
            try:
                cls = _resolve(qual)
            except (ImportError, AttributeError):
                problems.append(f"{page.name}: {qual} is documented but not importable")
                continue
            if not isinstance(cls, type):
                continue
            classes += 1
            missing = sorted(n for n in _public_members(cls) if f"{qual}.{n}" not in ids)
            if missing:
                problems.append(f"{page.name}: {qual} lacks {', '.join(missing)}")
    assert classes > 50
    assert not problems, _report(problems)


def _parameters(obj: Any) -> list[str]:
    """The parameters a caller passes: not self / cls, not private ``_name``, not ``*args``."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values() if not p.name.startswith("_") and p.name not in ("self", "cls")
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def test_parameters_are_documented(facts):
    """A Parameters list names every parameter of its callable (none forgotten); on the mechanism
    pages every parameter of a mechanism's constructor is in that list, and every parameter of
    its public methods (``release(secure=...)`` included) is described there or named in the text."""
    from puffer.mechanisms import Mechanism

    problems = []
    strict = 0
    for rel, info in facts.items():
        if not rel.startswith("api/"):
            continue
        for qual, doc in info["sigs"].items():
            try:
                obj = _resolve(qual)
            except (ImportError, AttributeError):
                continue
            params = _parameters(obj)
            if doc["names"]:
                missing = [p for p in params if p not in doc["names"]]
                if missing:
                    problems.append(f"{rel}: {qual}: the Parameters list omits {', '.join(missing)}")
            owner = _resolve(qual.rpartition(".")[0]) if not isinstance(obj, type) else None
            if isinstance(obj, type) and issubclass(obj, Mechanism) and obj is not Mechanism:
                strict += 1
                missing = [p for p in params if p not in doc["names"]]
                if missing:
                    problems.append(f"{rel}: {qual}: constructor parameters without a description: {', '.join(missing)}")
            elif isinstance(owner, type) and issubclass(owner, Mechanism) and callable(obj):
                strict += 1
                missing = [p for p in params if p not in doc["names"] and p not in doc["literals"]]
                if missing:
                    problems.append(f"{rel}: {qual}: parameters not documented: {', '.join(missing)}")
    assert not problems, _report(problems)
    assert strict > 30, "the mechanism pages were checked"


@pytest.mark.parametrize("query,expect", [("Wasserstein", "mechanisms"), ("ledger", "household"),
                                          ("granularity", "accounting")])
def test_search_finds_pages(server, browser, query, expect):
    browser.goto(server + f"search.html?q={query}")
    found = browser.eval("""new Promise(resolve => {
        const t0 = Date.now();
        (function poll() {
            const done = (document.querySelector('.search-summary, #search-progress') || {}).innerText || '';
            const items = Array.from(document.querySelectorAll('#search-results li a'));
            if (done.includes('Search finished') || Date.now() - t0 > 300000) resolve(items.map(a => a.getAttribute('href')));
            else setTimeout(poll, 100);
        })();
    })""")
    assert found, f"search for {query!r} found nothing"
    assert any(expect in h for h in found), (query, found[:10])
    assert not browser.events, browser.events


def _text(rel: str) -> str:
    """The visible text of a built page (tags stripped; enough for substring checks)."""
    import re

    html = (SITE / rel).read_text(encoding="utf-8")
    html = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_best_page_explains_loss_and_ties_and_links_its_types():
    """puffer.mechanisms.best is a function with its module's name: its page carries what the
    module explains (the loss, ties), a Parameters section, and Selection / Candidate have pages."""
    text = _text("api/puffer.mechanisms.best.html")
    for needle in ("Parameters", "loss", "ties keep the table", "Returns", "Selection"):
        assert needle in text, needle
    page = (SITE / "api" / "puffer.mechanisms.html").read_text(encoding="utf-8")
    assert 'id="puffer.mechanisms.Selection"' in page and 'id="puffer.mechanisms.Candidate"' in page


def test_publishing_shows_shell_commands_with_stable_paths():
    """The shell steps read as a shell session (``$ puffer noise ...``), not as Python calls, and
    no output names the build's temporary folder."""
    import re

    text = _text("publishing.html")
    assert "$ puffer noise readings.parquet" in text and "$ puffer keygen release.key" in text
    assert 'puffer("' not in text and "puffer(&quot;" not in text
    assert not re.search(r"/tmp/|tmp[a-z0-9_]{8}", text), re.search(r".{40}(/tmp/|tmp[a-z0-9_]{8}).{40}", text)


def test_getting_started_prints_no_float_noise():
    """The first page's outputs show no round number blurred by float rounding (7.0000000000000036:
    a scale rounded up by a few ulps, printed in full), the first numbers a newcomer reads."""
    import re

    text = _text("getting-started.html")
    blur = r"\d\.\d*?(?:0{8,}|9{8,})\d+"
    assert not re.search(blur, text), re.search(r".{40}" + blur, text)
