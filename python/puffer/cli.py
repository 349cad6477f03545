"""The ``puffer`` command line.

``puffer demo`` runs the built-in correlated-data example end to end: a Markov chain of
household activity (away/home every half hour over a day) under a grid of adversary priors.
``puffer run FILE`` does the same for a framework described in a TOML or JSON file (schema:
:mod:`puffer.config.schema`; unknown keys are errors, ``[target]`` with ``eps`` is required).

Results go to stdout (a table, or JSON with ``--json``); progress goes to stderr.

Exit codes (also in the README):

====  ===========================================================================
0     success
1     internal error (a bug: please report it with the traceback)
2     usage error (unknown subcommand or option)
3     bad input: missing or unreadable file, syntax error, schema violation, a
      parameter out of range
4     numerical failure or unbounded sensitivity (no finite guarantee exists)
5     ``puffer audit``: an empirical audit proved a violation
6     I/O failure (disk full, read-only or missing folder, output locked by
      another process); nothing was published without its ledger entry
7     the ledger failed verification (``puffer ledger verify``, or a release
      refused before any work): an edited, deleted, reordered, unsigned or
      wrongly signed entry, entries cut off the end of a checkpoint (the
      message names the entry)
130   interrupted (Ctrl-C)
141   the reader of the output went away (a broken pipe, e.g. ``| head``): quiet
143   terminated (SIGTERM), at any moment (also during an import; before
      start-up ends, the signal's own status, which shells report as 143)
====  ===========================================================================
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from .config.schema import DEMO

if TYPE_CHECKING:
    from .mechanisms._base import Mechanism

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INPUT, EXIT_NUMERIC, EXIT_INTERRUPT = 0, 1, 2, 3, 4, 130
EXIT_IO, EXIT_LEDGER, EXIT_PIPE, EXIT_TERM = 6, 7, 141, 143

GAIN_NOTE = ("gain = the noise scale group DP needs (same noise family, same target, group "
             "sensitivity) / the row's noise scale")


def _progress(msg: str) -> None:
    print(f"  .. {msg}", file=sys.stderr, flush=True)


def _guarantee_text(m: Any) -> str:
    from .guarantees import PP, ApproxRPP, RPPCurve

    g = m.guarantee
    if isinstance(g, PP):
        return f"({g.eps:.4g}, {g.delta:g})-PP" if g.delta else f"{g.eps:.4g}-PP"
    if isinstance(g, ApproxRPP):
        a = "inf" if math.isinf(g.alpha) else f"{g.alpha:g}"
        return f"({a}, {g.eps:.4g}, {g.delta:g})-approx RPP"
    if isinstance(g, RPPCurve):
        t = m.target
        if t.get("alpha") is not None:
            return f"({t['alpha']:g}, {g.at(t['alpha']).eps:.4g})-RPP (all orders)"
        pp = g.to_pp(t["delta"])
        return f"({pp.eps:.4g}, {pp.delta:g})-PP via RPP curve"
    return repr(g)


def run(config: dict[str, Any], out: Any = None, *, as_json: bool = False) -> int:
    """Calibrate every applicable mechanism for a validated description and print the table."""
    from ._progress import progress_default

    # long core computations (Markov Delta_G, ...) show a progress bar on stderr
    with progress_default(True):
        return _run(config, out, as_json=as_json)


def _run(config: dict[str, Any], out: Any = None, *, as_json: bool = False) -> int:
    from .config import build_framework, build_mechanisms, markov_quilt_mechanisms, validate_config
    from .mechanisms.best import calibrate_rows, select, selection_target, target_text

    out = sys.stdout if out is None else out
    config = validate_config(config)
    t0 = time.perf_counter()
    _progress(f"{config.get('name', 'framework from file')}: building the framework and its conditional laws")
    fw = build_framework(config["model"])
    rows: list[dict[str, Any]] = []
    todo = build_mechanisms(fw, config["target"]) + markov_quilt_mechanisms(fw, config["target"])
    timed: list[tuple[str, Any]] = []
    for k, (label, make) in enumerate(todo, 1):
        _progress(f"[{k}/{len(todo)}] calibrating {label}")
        t1 = time.perf_counter()
        timed.append(calibrate_rows([(label, make)])[0])   # a row that fails is listed as n/a
        rows.append({"label": label, "mechanism": timed[-1][1], "seconds": time.perf_counter() - t1})
    if all(isinstance(m, BaseException) for _, m in timed):
        raise timed[0][1]   # nothing applies: the first row's error (and its exit code)
    target = selection_target(config["target"])
    sel = select(timed, target)
    status = {c.label: c for c in sel.rows}
    mechs: list[tuple[str, Mechanism]] = [(lab, m) for lab, m in timed if not isinstance(m, BaseException)]
    for r in rows:
        m = r["mechanism"]
        grp = None if isinstance(m, BaseException) else m.group
        r["group_scale"] = None if grp is None else grp.scale
        r["gain"] = None if grp is None else grp.gain
    release = None
    rel = config.get("release")
    if rel:
        import numpy as np

        vals = np.asarray(rel["values"], dtype=np.float64)
        release = {"mechanism": sel.label, "seed": rel.get("seed"), "values": vals.tolist(),
                   "noisy": sel.mechanism.release(vals, rng=rel.get("seed")).tolist()}
    fit = getattr(fw, "fit", None)   # how Theta was fitted from traces (puffer.models.fit_markov)
    if as_json:
        doc = {"name": config.get("name"), "framework": repr(fw), "gain_definition": GAIN_NOTE,
               "group_sensitivity": fw.group_sensitivity, "group_note": fw.group_note,
               "fit": None if fit is None else fit.to_dict(),
               "rows": [{"label": r["label"],
                         **({"error": str(r["mechanism"])} if isinstance(r["mechanism"], BaseException)
                            else r["mechanism"].to_dict()),
                         "group_scale": r["group_scale"], "gain": r["gain"], "seconds": r["seconds"],
                         "selection": {"status": status[r["label"]].status, "reason": status[r["label"]].reason}}
                        for r in rows],
               "chosen": sel.label, "selection": sel.to_dict(), "release": release}
        json.dump(doc, out, indent=1, default=str)
        out.write("\n")
        return EXIT_OK
    print(f"puffer: {config.get('name', 'framework from file')}", file=out)
    print(f"  {fw!r}", file=out)
    if fit is not None:   # Theta fitted from traces: how (issue 33)
        print("  " + fit.summary().replace("\n", "\n  "), file=out)
    table = []
    for r in rows:
        m = r["mechanism"]
        c = status[r["label"]]
        choice = {"chosen": "<- chosen", "lost": c.reason.replace(" the chosen", ""), "n/a": "n/a"}[c.status]
        if isinstance(m, BaseException):
            table.append([r["label"], "-", "-", "-", "-", "-", f"{r['seconds']:.2f}s", choice])
            continue
        scale = "none" if m.noise is None else f"{type(m.noise).__name__}({m.noise.scale:.4g})"
        table.append([r["label"], f"{m.sensitivity.value:g}", scale, _guarantee_text(m),
                      "-" if r["group_scale"] is None else f"{r['group_scale']:.4g}",
                      "-" if r["gain"] is None else f"{r['gain']:.2f}x", f"{r['seconds']:.2f}s", choice])
    head = ["mechanism", "sensitivity", "noise", "guarantee", "group-DP scale", "gain", "time", "least noise"]
    widths = [max(len(str(t[i])) for t in table + [head]) for i in range(len(head))]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip()
    print("\n" + line + "\n" + "-" * len(line), file=out)
    for t in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(t, widths)).rstrip(), file=out)
    print(f"({GAIN_NOTE})", file=out)
    print(f"chosen: {sel.label}, the least {sel.loss_name} among the rows that give {target_text(target)}; "
          "n/a rows do not give it (their reasons: --json)", file=out)
    first = timed[0][1]
    if not isinstance(first, BaseException):
        w = cast("tuple[Any, ...]", first.sensitivity.witness)  # the Wasserstein row names its worst case
        print(f"\nworst case (Wasserstein): prior {w[0]!r}, secret pair {w[1]}", file=out)
    for label, m in mechs:
        q = getattr(m, "quilt", None)
        if q is not None:
            side: Callable[[Any], Any] = (lambda d: "none" if d is None else d)
            print(f"binding quilt ({label}): prior {q['prior']!r}, node X{q['node']}, a={side(q['a'])}, "
                  f"b={side(q['b'])}, max-influence {q['influence']:.4g}", file=out)
    if fw.group_sensitivity is not None:
        print(f"group DP baseline: sensitivity {fw.group_sensitivity:g} ({fw.group_note})", file=out)
    if release is not None:
        src = ("fresh OS entropy" if release["seed"] is None
               else f"seed {release['seed']} (an experiment: a seed can be guessed, never publish with one)")
        print(f"\nrelease with {release['mechanism']}, noise from {src}:", file=out)
        print("  true  " + " ".join(f"{v:8.2f}" for v in release["values"]), file=out)
        print("  noisy " + " ".join(f"{v:8.2f}" for v in release["noisy"]), file=out)
    print(f"\ndone in {time.perf_counter() - t0:.1f} s", file=out)
    return EXIT_OK


# Subcommands implemented in their own packages: name -> (module with add_parser(subparsers) and
# run(args), the one-line help). Only the subcommand named on the command line is imported, so
# ``puffer --version`` and ``puffer --help`` load no numerical module (numpy, scipy); the help
# lines here are checked against the modules' own by tests/test_ux.py.
_SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "account": ("puffer.accounting.cli", "compose the releases listed in a TOML/JSON file (Guerra-Balboa et al. "
                "2024) and explain the total"),
    "partial-demo": ("puffer.partial.cli", "partially private data: synthetic case study, Figures 1-3"),
    "audit": ("puffer.audit.cli", "audit every mechanism for a framework file empirically (exit code 5 if a "
              "violation is proved)"),
    "capacity-table": ("puffer.capacity.cli", "print Table 1 of capacity bounded DP (exact, sound and printed "
                       "values)"),
    "noise": ("puffer.publish.cli", "publish columns of a Parquet/CSV file with calibrated noise (writes Parquet "
              "and a ledger entry)"),
    "keygen": ("puffer.publish.cli", "write a new 256-bit release key file (mode 0600, never overwritten)"),
    "clamp": ("puffer.publish.cli", "clamp the noisy columns of a published file to a range (post-processing, "
              "recorded in the ledger)"),
    "ledger": ("puffer.publish.cli", "verify a release ledger or show its per-unit totals"),
    "series": ("puffer.publish.cli", "plan a series of releases on one chain (a signed plan file for `puffer noise "
               "--series`)"),
}


def _parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser. With ``argv``, only the subcommand it names is built in full (its
    module imported); the others are listed by name and help line. Without, all are built."""
    import importlib

    from ._version import __version__

    parser = argparse.ArgumentParser(prog="puffer", description="Calibrated noise for Pufferfish privacy.",
                                     epilog="exit codes: 0 ok, 1 internal error, 2 usage, 3 bad input, "
                                            "4 numerical failure / unbounded sensitivity, 5 audit proved a violation, 6 I/O "
                                            "failure, 7 ledger "
                                            "verification failed, 130 interrupted, 141 broken pipe, 143 terminated")
    parser.add_argument("--version", action="version", version=f"puffer {__version__}")
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="run the built-in correlated-data example")
    d.add_argument("--json", action="store_true", help="print the results as JSON")
    d.add_argument("--plot", metavar="DIR", help="also write the figures (PNG) into DIR (needs puffer-privacy[plot])")
    r = sub.add_parser("run", help="calibrate the mechanisms for a framework described in a TOML/JSON file")
    r.add_argument("file", help="a TOML/JSON framework description: [model], [target] (eps, optional delta, "
                                "alpha), optional [release] values (the schema: puffer.config.SCHEMA_DOC)")
    r.add_argument("--json", action="store_true", help="print the results as JSON")
    # top-level options take no value, so the first word that is not an option names the subcommand
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), None)
    chosen_module = _SUBCOMMANDS[chosen][0] if chosen in _SUBCOMMANDS else None
    built: set[str] = set()  # one module may add several subcommands (puffer.publish.cli: noise, keygen, ledger)
    for name, (module, help_line) in _SUBCOMMANDS.items():
        if argv is None or module == chosen_module:
            if module not in built:
                importlib.import_module(module).add_parser(sub)
                built.add(module)
        else:
            sub.add_parser(name, help=help_line)
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    import importlib

    if args.cmd == "demo":
        if args.plot:
            # checked before the minutes of computation the figures come after
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                print("puffer: error: --plot needs matplotlib: pip install 'puffer-privacy[plot]'", file=sys.stderr)
                return EXIT_INPUT
        code = run(DEMO, as_json=args.json)
        if args.plot:
            from .plot import demo_figures
            _progress(f"writing figures to {args.plot}: {', '.join(demo_figures(args.plot, config=DEMO, progress=True))}")
        return code
    if args.cmd == "run":
        from .config import load_config
        return run(load_config(args.file), as_json=args.json)
    if args.cmd in _SUBCOMMANDS:
        return int(importlib.import_module(_SUBCOMMANDS[args.cmd][0]).run(args))
    raise AssertionError(f"unhandled subcommand {args.cmd!r}")


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that a release cleans up as on Ctrl-C."""


class _Signals:
    """SIGTERM -> :class:`_Terminated` and SIGINT -> ``KeyboardInterrupt`` in the main thread, raised
    at the first moment that is safe:

    * never inside an import: an exception raised while a library initialises is swallowed or
      garbled by it (SIGTERM during the lazy pandas import ended in exit 1 with an AttributeError
      traceback, or in a release finishing with exit 0); the signal is remembered and raised
      within 10 ms of the import's end (a SIGALRM timer polls);
    * once: a second signal during the clean-up the first one started is ignored.

    ``received`` (the first signal's number) maps any exception that follows to 143 / 130."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._deferred: int | None = None
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        import signal

        from . import _deferred

        for sig in (signal.SIGTERM, signal.SIGINT):
            # a signal ignored when puffer started stays ignored (the Unix convention: a shell
            # without job control starts `puffer ... &` with SIGINT ignored, so that Ctrl-C stops
            # the script's foreground command only; Python keeps it ignored too)
            if signal.getsignal(sig) is not signal.SIG_IGN:
                self._old[sig] = signal.signal(sig, self._handler)
        _deferred.set_hook(self.raise_pending)

    def raise_pending(self) -> None:
        """Raise a deferred signal now (called outside any import: before a release publishes,
        and when a command returns), so that it is never lost to a timer tick inside an import."""
        if self._deferred is not None and self.received is None:
            self._raise(self._deferred)

    def _raise(self, signum: int) -> None:
        import signal

        self._deferred = None
        self.received = signum
        if signum == signal.SIGTERM:
            raise _Terminated()
        raise KeyboardInterrupt()

    def restore(self, *, then_exit: int | None = None) -> None:
        """Put the handlers back. ``then_exit``: the process is about to exit with this code (the
        command line): a SIGINT or SIGTERM from now on exits with it at once, since what the command
        did is done (a release published and recorded), instead of killing the process (-2/-15)."""
        import os
        import signal

        from . import _deferred

        _deferred.set_hook(None)

        if signal.SIGALRM in self._old:  # only a deferred signal arms the timer (a caller's stays untouched)
            signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, old in self._old.items():
            if then_exit is not None and sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda *_: os._exit(then_exit))
            else:
                signal.signal(sig, old)
        self._old.clear()

    def _poll_soon(self) -> None:
        import signal

        if signal.SIGALRM not in self._old:
            self._old[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._handler)
        signal.setitimer(signal.ITIMER_REAL, 0.01)

    @staticmethod
    def _importing(frame: Any) -> bool:
        while frame is not None:
            if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
                return True
            frame = frame.f_back
        return False

    def _handler(self, signum: int, frame: Any) -> None:
        import signal

        if signum == signal.SIGALRM:
            if self._deferred is None:
                return
            signum = self._deferred
        elif self.received is not None or self._deferred is not None:
            return  # the first signal is being handled: ignore repeats during its clean-up
        if self._importing(frame):
            self._deferred = signum
            self._poll_soon()
            return
        self._raise(signum)


def _say(msg: str) -> None:
    """A line on stderr; a closed stderr (a broken pipe) is not an error of its own."""
    try:
        print(msg, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null, so that the interpreter's final flush
    does not print "Exception ignored ... BrokenPipeError"."""
    import os

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (tests capture stdout)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


class _StdoutFailed(Exception):
    """An OSError writing stdout (other than a broken pipe), told apart from a command's own."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(exc.strerror or str(exc))


class _Stdout:
    """``sys.stdout`` while a command runs: its write errors raise :class:`_StdoutFailed`."""

    def __init__(self, out: Any) -> None:
        self._out = out

    def write(self, s: str) -> int:
        try:
            return int(self._out.write(s))
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _StdoutFailed(exc) from None

    def flush(self) -> None:
        try:
            self._out.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _StdoutFailed(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)


def quiet_on_broken_pipe(main: Callable[[], int]) -> int:
    """``main()``'s exit code; if the reader of stdout went away (``... | head``): exit 141, as
    ``cat`` gives, with no traceback and no "Exception ignored" at exit. stdout is flushed in
    here, so a reader gone before the last buffered bytes is caught too. A stdout that cannot
    be written (a full disk: ``puffer noise ... --json > release.json``) is an I/O error, exit
    6, after whatever the command did (a release stays recorded). The ``puffer`` command and
    the paper commands (examples/papers/) run through it."""
    real = sys.stdout
    sys.stdout = _Stdout(real)  # a file-like wrapper of the real one
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_PIPE
    except _StdoutFailed as exc:
        _say(f"puffer: error: writing the standard output: {exc} (what the command did before stands, e.g. a "
             "release recorded in its ledger)")
        _quiet_stdout()  # the interpreter's final flush would fail again
        return EXIT_IO
    finally:
        sys.stdout = real
    return code


def main(argv: list[str] | None = None) -> int:
    """The ``puffer`` command line (``argv``: default ``sys.argv[1:]``, as the installed command
    runs it: a signal that arrives once the command has returned then exits with its code)."""
    import threading

    sigs = _Signals()
    if threading.current_thread() is threading.main_thread():
        sigs.install()
    code = EXIT_INTERNAL
    try:
        code = _main(argv, sigs)
        return code
    finally:
        sigs.restore(then_exit=code if argv is None and sigs._old else None)


def _main(argv: list[str] | None, sigs: _Signals) -> int:
    import signal

    from .errors import LedgerError, NumericalError, PufferError, PufferIOError, UnboundedSensitivityError

    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = _parser(argv).parse_args(argv)  # exits with 2 on usage errors
        # the reader went away (`puffer ledger show --json L | head`): quiet, as `cat` is
        code = quiet_on_broken_pipe(lambda: _dispatch(args))
        sigs.raise_pending()   # a signal still deferred when the command ends: its exit code
        return code
    except LedgerError as exc:
        _say(f"puffer: error: {exc}")
        return EXIT_LEDGER
    except PufferIOError as exc:
        _say(f"puffer: error: {exc}")
        return EXIT_IO
    except (NumericalError, UnboundedSensitivityError) as exc:
        _say(f"puffer: error: {exc}")
        return EXIT_NUMERIC
    except PufferError as exc:
        _say(f"puffer: error: {exc}")
        return EXIT_INPUT
    except BaseException as exc:
        # a signal arrived (also if a library turned it into another exception): its exit code
        if sigs.received == signal.SIGTERM or isinstance(exc, _Terminated):
            _say("puffer: terminated")
            return EXIT_TERM
        if sigs.received == signal.SIGINT or isinstance(exc, KeyboardInterrupt):
            _say("puffer: interrupted")
            return EXIT_INTERRUPT
        raise
