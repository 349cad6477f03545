"""A small Chrome DevTools Protocol client driving Debian's headless chromium (websocket-client)."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from typing import Any

import websocket


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless chromium with one page; ``events`` collects console errors, exceptions and
    failed loads since the last :meth:`goto`."""

    def __init__(self, binary: str) -> None:
        self.port = _free_port()
        self.profile = tempfile.mkdtemp(prefix="puffer-chromium-")
        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--disable-extensions", "--disable-background-networking",
             f"--remote-debugging-port={self.port}", f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # hang guards, far above any slowness: a loaded 2-core machine starts chromium in minutes
        deadline = time.monotonic() + 600
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=2) as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                if pages:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.2)
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=600, suppress_origin=True)
        self._id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        mid = self._id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._event(msg)

    def _event(self, msg: dict[str, Any]) -> None:
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Runtime.exceptionThrown":
            self.events.append({"kind": "exception", "text": p["exceptionDetails"].get("exception", {})
                                .get("description", p["exceptionDetails"].get("text"))})
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.events.append({"kind": "console.error", "text": " ".join(str(a.get("value", a.get("description")))
                                                                      for a in p.get("args", []))})
        elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
            self.events.append({"kind": "log.error", "text": p["entry"].get("text"), "url": p["entry"].get("url")})
        elif m == "Network.loadingFailed" and not p.get("canceled"):
            self.events.append({"kind": "load failed", "text": p.get("errorText")})
        elif m == "Page.loadEventFired":
            self._loaded = True

    def goto(self, url: str, timeout: float = 600.0) -> None:
        self.events = []
        self._loaded = False
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while not self._loaded:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load in {timeout} s")
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            self._event(json.loads(self.ws.recv()))
        self.ws.settimeout(600)

    def eval(self, expr: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)
