"""The built documentation site in a real browser (Debian's headless chromium over the DevTools
protocol): every page renders with content, no page logs a console error, an exception or a failed
load, no internal link is broken (target file and #anchor exist), and the search finds pages.
Run by scripts/docs.sh after the build (PUFFER_DOCS_SITE=build/docs)."""
from __future__ import annotations

import functools
import http.server
import os
import threading
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

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
              "theorems.html", "papers.html", "search.html", "tutorials/household.html",
              "tutorials/accounting.html", "tutorials/partial.html", "tutorials/capacity.html", "tutorials/sgd.html"):
        assert p in pages, p
    assert any(p.startswith("api/puffer.mechanisms") for p in pages)


def test_every_page_renders_without_errors_or_broken_links(server, browser):
    problems: list[str] = []
    checked_links = 0
    for rel in _pages():
        browser.goto(server + rel)
        info = browser.eval("""(() => {
            const main = document.querySelector('article') || document.querySelector('[role=main]') || document.body;
            return {title: document.title, text: main.innerText.trim().length,
                    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
                    imgs: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)};
        })()""")
        if not info["title"] or (info["text"] < 20 and rel != "search.html"):   # results need a query
            problems.append(f"{rel}: empty page (title {info['title']!r}, {info['text']} chars)")
        for e in browser.events:
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
    assert not problems, "\n".join(problems[:50]) + (f"\n... {len(problems)} in all" if len(problems) > 50 else "")


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
