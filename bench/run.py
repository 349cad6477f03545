#!/usr/bin/env python3
"""Benchmark harness: times puffer against the peers a user would pick instead, in one process
and one run, and writes bench/RESULTS.md with the machine facts.

Each module bench/suites/<name>.py defines ``TITLE`` and ``run(ctx) -> list[dict]``; each dict
is a table ``{"title", "columns", "rows", "notes"}``. ``ctx.time(fn)`` returns the median wall
time of fn in seconds. The C++ google-benchmark target (bench/cpp) is built and run too unless
``--no-cpp``.

    python bench/run.py                 # everything, writes bench/RESULTS.md
    python bench/run.py --only transport --no-cpp   # one suite, printed, RESULTS.md untouched
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class Ctx:
    def __init__(self, quick: bool):
        self.quick = quick

    @staticmethod
    def time(fn, *, repeat: int = 5, number: int | None = None, min_time: float = 0.05) -> float:
        """Median seconds per call over `repeat` timings of `number` calls (auto-sized)."""
        fn()  # warm-up
        if number is None:
            number, t = 1, 0.0
            while True:
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                t = time.perf_counter() - t0
                if t >= min_time or number >= 1 << 20:
                    break
                number *= 2
        samples = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            samples.append((time.perf_counter() - t0) / number)
        return statistics.median(samples)


def _version(mod: str) -> str:
    try:
        from importlib.metadata import version
        return version(mod)
    except Exception:  # noqa: BLE001 - a missing peer is reported, not fatal
        return "not installed"


def machine_facts() -> list[str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    flags = ""
    try:
        import puffer._core as core
        simd = getattr(getattr(core, "sampling", None), "simd_targets", None)
        flags = ", ".join(simd()) if callable(simd) else ""
    except Exception:  # noqa: BLE001
        pass
    cxx = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.splitlines()
    facts = [
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- nproc: {os.cpu_count()}; CPU: {cpu}",
        f"- python {platform.python_version()}; numpy {_version('numpy')}; scipy {_version('scipy')}; "
        f"puffer {_version('puffer-privacy')}; POT {_version('POT')}; opendp {_version('opendp')}",
        f"- compiler: {cxx[0] if cxx else 'unknown'}",
    ]
    if flags:
        facts.append(f"- SIMD targets available to puffer: {flags}")
    return facts


def render(table: dict) -> str:
    cols = table["columns"]
    out = [f"### {table['title']}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table["rows"]:
        out.append("| " + " | ".join(str(c) for c in row) + " |")
    if table.get("notes"):
        out += ["", table["notes"]]
    return "\n".join(out) + "\n"


def run_cpp(quick: bool) -> dict | None:
    build = ROOT / "build" / "bench"
    # the venv's cmake and ninja (installed by scripts/setup.sh), else whatever is on PATH
    bindir = Path(sys.executable).parent
    cmake = str(bindir / "cmake") if (bindir / "cmake").exists() else "cmake"
    gen = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={bindir / 'ninja'}"] if (bindir / "ninja").exists() else []
    cfg = [cmake, "-S", str(ROOT), "-B", str(build), *gen, "-DPUFFER_BUILD_BENCH=ON", "-DCMAKE_BUILD_TYPE=Release"]
    subprocess.run(cfg, check=True, capture_output=True)
    subprocess.run([cmake, "--build", str(build), "--target", "puffer_bench", "--parallel", "2"], check=True,
                   capture_output=True)
    args = [str(build / "bench" / "puffer_bench"), "--benchmark_format=json"]
    if quick:
        args.append("--benchmark_min_time=0.01")
    res = subprocess.run(args, check=True, capture_output=True, text=True)
    data = json.loads(res.stdout)
    rows = [[b["name"], f"{b['real_time']:.4g} {b['time_unit']}",
             f"{b.get('items_per_second', 0) / 1e6:.3g}" if "items_per_second" in b else ""]
            for b in data["benchmarks"]]
    return {"title": "C++ core (google-benchmark, no Python in the loop)",
            "columns": ["benchmark", "time", "M items/s"], "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", help="run only this suite (repeatable)")
    ap.add_argument("--no-cpp", action="store_true", help="skip the google-benchmark target")
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    ap.add_argument("--out", default=None, help="write here instead of bench/RESULTS.md")
    args = ap.parse_args()

    ctx = Ctx(args.quick)
    sections = []
    suites = sorted(p for p in (HERE / "suites").glob("*.py") if not p.name.startswith("_"))
    sys.path.insert(0, str(HERE / "suites"))
    for path in suites:
        name = path.stem
        if args.only and name not in args.only:
            continue
        spec = importlib.util.spec_from_file_location(f"bench_suite_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        print(f"[bench] {name}: {mod.TITLE}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        tables = mod.run(ctx)
        sections.append(f"## {mod.TITLE}\n\n" + "\n".join(render(t) for t in tables)
                        + f"\n(suite time {time.perf_counter() - t0:.1f} s)\n")
    if not args.no_cpp and not args.only:
        print("[bench] C++ google-benchmark target", file=sys.stderr, flush=True)
        t = run_cpp(args.quick)
        if t:
            sections.append("## C++ micro-benchmarks\n\n" + render(t))
    text = "# puffer benchmark results\n\nOne run of `python bench/run.py`; ratios compare puffer " \
           "with peers timed in the same process.\n\n" + "\n".join(machine_facts()) + "\n\n" + "\n".join(sections)
    if args.only and not args.out:
        print(text)
    else:
        out = Path(args.out) if args.out else HERE / "RESULTS.md"
        out.write_text(text)
        print(f"[bench] wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
