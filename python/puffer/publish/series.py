"""Publishing a planned series: the signed plan file, the window releases, what the ledger records.

A series is planned once over one chain's whole horizon (:func:`puffer.series.plan`: the
noise scale of every window, and the certified guarantee of **all windows together**, whatever
order they are published in); this module publishes it.

The plan file (``puffer series plan FRAMEWORK --windows LEN --eps E --out PLAN.json [--sign
KEY]``, :func:`write_plan`). One JSON object (canonical: sorted keys, compact), never
overwritten: ``puffer_series_plan`` (:data:`PLAN_FORMAT`), ``plan_id`` (128 random bits: the
series' identity in a ledger), ``framework`` (the framework file's ``config`` and the
framework's ``digest``), ``horizon``, ``window_length``, ``windows`` ([start, stop) positions),
``eps``, ``delta``, ``scales``, ``guarantee``, ``theorem``, ``binding_secret``, ``plan``
(:meth:`puffer.series.SeriesPlan.to_json`) and ``plan_digest`` (its
:meth:`~puffer.series.SeriesPlan.digest`), ``created``, ``puffer_version``; ``digest`` = SHA-256 of
the canonical JSON of everything but ``digest`` and ``sig``; with ``--sign``, ``signer`` (inside the
digested body) and ``sig``, the Ed25519 signature of :data:`SERIES_DOMAIN` ``|| digest``
(:mod:`puffer.publish.signing`; domain-separated from ledger entries and checkpoints).
:class:`SeriesFile` loads it and refuses, naming what is wrong: a digest that does not match
the content, a signature that does not verify, a plan whose own digest, scales, windows or
guarantee differ from the copies the file shows, a framework that does not rebuild to the
recorded digest.

A window release (``puffer noise IN OUT --column C --unit U --order O --series PLAN.json --window K``;
``series=``/``window=`` of :class:`~puffer.publish.options.PublishOptions` on every engine):
one column; the ``order`` column holds positions of the plan's horizon and every unit has
exactly the positions of window K (a row outside it is refused, naming its row and position);
the query is the window's sum, its noise the plan's scale for window K (:meth:`SeriesPlan.mechanism`)
on the lattice path as every release. A framework file given as well (``--mechanism``) must
be the plan's (same digest). With a signed ledger the plan must be signed by the ledger's key.

The first time a plan is used with a ledger, its bound is re-derived from the embedded
framework (:func:`verify_for_ledger`, :meth:`puffer.series.SeriesPlan.verify`: the certified
eps of its windows at its scales and lattice padding, refused unless at most the plan's eps),
whether the plan is signed or not: a digest or a signature shows who wrote a file, not that its
scales hold. The ledger records the plan once, in an entry ``{"event":
"series", "series": SeriesFile.record()}`` written (under the ledger's lock) just before the
first window's ``pending`` entry: plan id, digest, guarantee, theorem, binding secret, the
windows and their scales, the framework digest, the plan's signer and ``verified`` (the
re-derived eps and the plan digest it holds for); later windows of the plan need only the
digest to match this record. Each window's pending
entry carries ``series`` (:meth:`SeriesFile.entry_field`: plan id, digest, window, its
positions and scale) and, as its ``guarantee``, the window mechanism's
(:meth:`puffer.series.SeriesPlan.mechanism`), which is the plan's guarantee (type, eps, delta:
checked) with the window's provenance: the window released alone is a marginal of the series,
so the guarantee of all windows covers it.
Refused under the lock (:func:`check_series_release`): a plan file whose digest differs from
the ledger's record of its plan id (edited after its first release), and a second release of a
window on units it already covers (``rerun`` reproduces a recorded one and is allowed).

Totals (:mod:`puffer.publish.totals`): the counted window releases of one plan on a population
of units count **once**, with the plan's guarantee (the plan certifies all windows together:
:func:`puffer.series.plan`). Anything else on the same units composes with the series only
where a theorem covers it: DP-type plan guarantees through the accountant, like any release;
a Pufferfish plan guarantee with nothing (no known sequential composition for Pufferfish
mechanisms in general, Pierquin et al. 2024, App. E.1), so such a release is refused unless
``allow_uncomposed``. The MQM composition of Song & Chaudhuri (2017) is not applied: its
conditions are not checked here.

What the plan cannot see: windows chosen adaptively from earlier outputs (the plan fixes the
windows and their scales in advance, and its guarantee is for those), releases recorded in
another ledger, and the same people under other unit ids.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import secrets
from typing import Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ._files import loads, read_regular, shown_path, write_new

__all__ = ["SeriesFile", "write_plan", "make_plan", "tile_windows", "check_series_release", "verify_for_ledger",
           "series_record_entries",
           "series_status", "SERIES_DOMAIN", "PLAN_FORMAT"]

#: the signature domain of a series plan file (never valid as a ledger entry's or checkpoint's)
SERIES_DOMAIN = b"puffer/v1/series-plan\x00"
#: the version of the plan file's format
PLAN_FORMAT = 1
_UNDIGESTED = ("digest", "sig")
_MAX_BYTES = 64 << 20


def _canonical(obj: Any) -> bytes:
    from .ledger import canonical
    return canonical(obj)


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x, default=str, allow_nan=True).replace("NaN", "null"))


def tile_windows(horizon: int, length: int) -> list[tuple[int, int]]:
    """The windows [0, L), [L, 2L), ... tiling a horizon of ``horizon`` positions (``length`` must
    divide it: a shorter last window would be another query).

    >>> tile_windows(6, 2)
    [(0, 2), (2, 4), (4, 6)]
    """
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise ParameterError("windows", length, "a window length, an integer >= 1")
    if length > horizon or horizon % length:
        raise ParameterError("windows", int(length), f"a window length that divides the framework's horizon "
                             f"T = {horizon} (the windows tile positions 0 .. {horizon - 1})")
    return [(s, s + int(length)) for s in range(0, horizon, int(length))]


def _config(framework: Any) -> tuple[dict[str, Any], str | None]:
    from ..config import load_config, validate_config

    if isinstance(framework, dict):
        return validate_config(framework), None
    if isinstance(framework, (str, os.PathLike)):
        return load_config(framework), os.path.abspath(os.fspath(framework))
    raise ParameterTypeError("framework", framework, "a framework file (.toml/.json, the schema of `puffer run`) "
                             "or its dict")


def _chain(cfg: dict[str, Any], what: str) -> Any:
    from ..config import build_framework
    from ..models import MarkovChainFramework

    if "release" in cfg:
        raise ParameterError(what, "a [release] table", "a framework file without a [release] table (the values "
                             "to release come from the columns)")
    kind = cfg["model"].get("kind")
    if kind != "markov_chain":
        raise ParameterError(what, f"model kind {kind!r}", "a framework of model kind 'markov_chain' whose T is the "
                             "whole horizon (a plan file embeds its framework and rebuilds it anywhere: for a fitted "
                             "Theta, write the fitted chains into a markov_chain file)")
    fw = build_framework(cfg["model"])
    if not isinstance(fw, MarkovChainFramework) or int(fw.dim) != 1:
        raise ParameterError(what, repr(fw), "a Markov-chain framework (model kind markov_chain) whose "
                             "chain covers the series' whole horizon")
    return fw


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def make_plan(framework: Any, *, windows: int, eps: float, delta: float = 0.0, signing_key: Any = None,
              progress: Any = None) -> dict[str, Any]:
    """The plan file's object (see the module docstring) for a framework file or dict whose chain
    covers the horizon, windows of ``windows`` positions tiling it, target ``eps``/``delta``;
    signed with ``signing_key`` (an Ed25519 key file or :class:`~puffer.publish.signing.SigningKey`);
    ``progress`` as for :func:`puffer.series.plan` (:mod:`puffer._progress`)."""
    from .. import series as _series
    from .._version import __version__
    from .signing import as_signing_key

    cfg, _ = _config(framework)
    fw = _chain(cfg, "framework")
    wins = tile_windows(int(fw.length), windows)
    sk = as_signing_key(signing_key)
    sp = _series.plan(fw, wins, eps, delta, progress=progress)
    body: dict[str, Any] = {
        "puffer_series_plan": PLAN_FORMAT, "plan_id": secrets.token_hex(16), "created": _now(),
        "puffer_version": __version__,
        "framework": {"config": _jsonable(cfg), "digest": fw.digest()},
        "horizon": int(fw.length), "window_length": int(windows), "windows": [[int(a), int(b)] for a, b in sp.windows],
        "eps": float(eps), "delta": float(delta), "scales": [float(s) for s in sp.scales],
        "guarantee": sp.guarantee.to_dict(), "theorem": _theorem_text(sp),
        "theorem_refs": [r.to_dict() for r in _refs(sp)],
        "binding_secret": _jsonable(sp.binding_secret), "plan": _plan_text(sp), "plan_digest": str(sp.digest()),
    }
    if sk is not None:
        body["signer"] = sk.public.describe()
    d = _sha(_canonical(body))
    env = {**body, "digest": d}
    if sk is not None:
        env["sig"] = sk.sign(SERIES_DOMAIN, bytes.fromhex(d))
    return env


def _refs(sp: Any) -> tuple[Any, ...]:
    t = sp.theorem
    return tuple(t) if isinstance(t, (tuple, list)) else ()


def _theorem_text(sp: Any) -> str:
    """The plan's theorem in words: its summary, and the results it cites."""
    summary = getattr(sp, "theorem_summary", None)
    refs = _refs(sp)
    cited = "; ".join(str(r) for r in refs)
    if summary:
        return f"{summary} ({cited})" if cited else str(summary)
    return cited or str(sp.theorem)


def _plan_text(sp: Any) -> str:
    t = sp.to_json()
    return t if isinstance(t, str) else json.dumps(t, sort_keys=True)


def write_plan(framework: Any, out: str | os.PathLike[str], *, windows: int, eps: float, delta: float = 0.0,
               signing_key: Any = None, progress: Any = None) -> dict[str, Any]:
    """Plan a series (:func:`make_plan`) and write its file to ``out`` (never overwritten, mode
    0644: a plan holds no secret); returns the file's object."""
    p = os.path.abspath(os.fspath(out))
    if os.path.exists(p):
        raise ParameterError("out", os.fspath(out), "a path where no file exists (a series plan is never overwritten)")
    if not os.path.isdir(os.path.dirname(p)):
        raise ParameterError("out", os.fspath(out), "a path in an existing folder")
    env = make_plan(framework, windows=windows, eps=eps, delta=delta, signing_key=signing_key, progress=progress)
    write_new(p, _canonical(env) + b"\n", 0o644, "series plan")
    return env


class SeriesFile:
    """A verified series plan file (see the module docstring): ``path``, ``data`` (the file's
    object), ``plan_id``, ``digest``, ``plan`` (the :class:`puffer.series.SeriesPlan`),
    ``framework`` (rebuilt from the recorded config), ``signer`` (key id or None).

    Loading checks the digest, the signature (against the key the file names; a signed ledger
    checks that key is its own: :meth:`check_signer`), the framework's digest and that the plan
    restored from ``plan`` has the recorded ``plan_digest``, windows, scales and guarantee."""

    def __init__(self, source: Any) -> None:
        if isinstance(source, SeriesFile):
            self.__dict__.update(source.__dict__)
            return
        if isinstance(source, (str, os.PathLike)):
            p = os.fspath(source)
            self.path: str | None = os.path.abspath(p)
            try:
                text = read_regular(p, _MAX_BYTES).decode("utf-8")
            except FileNotFoundError:
                raise ParameterError("series", shown_path(p), "an existing series plan file (`puffer series plan`)"
                                     ) from None
            except (OSError, UnicodeDecodeError) as exc:
                raise ParameterError("series", shown_path(p), f"a readable series plan file ({exc})") from None
            try:
                data = loads(text)
            except ValueError as exc:
                raise ParameterError("series", shown_path(p), f"a series plan in JSON ({exc})") from None
        elif isinstance(source, dict):
            self.path, data = None, source
        else:
            raise ParameterTypeError("series", source, "a series plan file (`puffer series plan`) or its dict")
        self.data = data
        self._verify()

    def __repr__(self) -> str:
        return (f"SeriesFile(plan_id={self.plan_id!r}, windows={len(self.windows)}, "
                f"guarantee={self.data.get('guarantee', {}).get('type')}, signed={self.signer is not None})")

    # ------------------------------------------------------------------ checks
    def _bad(self, why: str) -> ParameterError:
        shown = shown_path(self.path) if self.path else "<dict>"
        return ParameterError("series", shown, f"an intact series plan written by `puffer series plan`: {why}")

    def _verify(self) -> None:
        from .. import series as _series
        from .signing import PublicKey

        d = self.data
        if not isinstance(d, dict) or d.get("puffer_series_plan") != PLAN_FORMAT:
            raise self._bad(f"not a plan of format {PLAN_FORMAT} (field puffer_series_plan)")
        for name in ("plan_id", "digest", "plan", "plan_digest", "theorem"):
            if not isinstance(d.get(name), str):
                raise self._bad(f"field {name!r} missing or not text")
        body = {k: v for k, v in d.items() if k not in _UNDIGESTED}
        try:
            got = _sha(_canonical(body))
        except ParameterError:
            raise self._bad("not JSON puffer writes") from None
        if got != d["digest"]:
            raise self._bad(f"its digest does not match its content (recorded {d['digest']}, computed {got}): "
                            "the file was edited")
        self.signer: str | None = None
        if "signer" in d or "sig" in d:
            s = d.get("signer")
            try:
                key = PublicKey.from_hex(s.get("public_key") if isinstance(s, dict) else None, what="series signer")
            except ParameterError:
                raise self._bad("its signer is not an Ed25519 public key") from None
            if not isinstance(s, dict) or s.get("key_id") != key.key_id or not key.verify(SERIES_DOMAIN, bytes.fromhex(got), d.get("sig")):
                raise self._bad(f"its signature does not verify under key {key.key_id}: the file was edited or "
                                "re-signed")
            self.signer = key.key_id
            self.public_key = key
        self.plan_id, self.digest = d["plan_id"], d["digest"]
        fwd = d.get("framework")
        if not isinstance(fwd, dict) or not isinstance(fwd.get("config"), dict):
            raise self._bad("no framework config")
        cfg, _ = _config(fwd["config"])
        self.config = cfg
        self.framework = _chain(cfg, "series")
        if self.framework.digest() != fwd.get("digest"):
            raise self._bad("its framework does not rebuild to the recorded digest (another puffer version, or "
                            "the file was edited)")
        sp = _series.SeriesPlan.from_json(d["plan"])
        if str(sp.digest()) != d["plan_digest"]:
            raise self._bad("the plan's own digest differs from plan_digest")
        wins = [[int(a), int(b)] for a, b in sp.windows]
        if wins != d.get("windows") or [float(s) for s in sp.scales] != d.get("scales") \
                or sp.guarantee.to_dict() != d.get("guarantee") or _theorem_text(sp) != d["theorem"] \
                or getattr(sp, "framework_digest", fwd.get("digest")) != fwd.get("digest"):
            raise self._bad("the windows, scales, guarantee or theorem it shows are not the plan's")
        if not wins or wins[-1][1] > int(self.framework.length) or any(a < 0 or b <= a for a, b in wins):
            raise self._bad(f"windows within the framework's horizon T = {int(self.framework.length)}")
        self.plan = sp
        self.windows = [(a, b) for a, b in wins]
        #: the re-derived bound (:meth:`verify`), once computed
        self.verified: dict[str, Any] | None = None

    def verify(self, progress: Any = None) -> dict[str, Any]:
        """Re-derive the plan's bound from the embedded framework
        (:meth:`puffer.series.SeriesPlan.verify`: the certified eps of its windows at its scales,
        refused unless at most the plan's eps), once per object. The digests and a signature
        show who wrote the file, not that its scales hold: this is run the first time a plan is
        used with a ledger, whatever its signature (:func:`verify_for_ledger`)."""
        if self.verified is None:
            try:
                self.verified = self.plan.verify(self.framework, progress=progress)
            except ParameterError as exc:
                raise self._bad(f"its bound does not hold: {exc}") from None
        return self.verified

    def check_signer(self, ledger_signer: dict[str, Any] | None) -> None:
        """A signed ledger (``ledger_signer``: its first entry's ``signer``) takes plans signed by
        its own key only: anyone can sign a plan with a key of their own."""
        if ledger_signer is None:
            return
        want = ledger_signer.get("key_id")
        if self.signer != want:
            got = "unsigned" if self.signer is None else f"signed by key {self.signer}"
            raise ParameterError("series", shown_path(self.path) if self.path else "<dict>",
                                 f"a plan signed by the ledger's key {want} (`puffer series plan ... --sign KEY` "
                                 f"with the key that signs the ledger); this plan is {got}")

    def check_framework(self, mechanism: Any) -> None:
        """A mechanism or framework given with the plan must be the plan's framework."""
        if mechanism is None:
            return
        from ..mechanisms._base import Mechanism

        if isinstance(mechanism, Mechanism):
            fw = mechanism.framework
            got = None if fw is None else fw.digest()
        elif isinstance(mechanism, (str, os.PathLike, dict)):
            cfg, _ = _config(mechanism)
            got = _chain(cfg, "mechanism").digest()
        else:
            raise ParameterError("mechanism", repr(mechanism)[:80], "None, or the plan's framework file (a series "
                                 "window's noise is the plan's)")
        if got != self.framework.digest():
            shown = os.fspath(mechanism) if isinstance(mechanism, (str, os.PathLike)) else type(mechanism).__name__
            raise ParameterError("mechanism", shown, f"the series plan's framework (digest "
                                 f"{self.framework.digest()}); it has digest {got}")

    def window(self, k: Any) -> tuple[int, int]:
        """The positions [start, stop) of window ``k`` (an error naming the plan's windows if it has none)."""
        n = len(self.windows)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= int(k) < n:
            raise ParameterError("window", k, f"a window of the series plan: 0 .. {n - 1} ({n} windows of "
                                 f"{self.data.get('window_length')} positions over T = {self.data.get('horizon')})")
        return self.windows[int(k)]

    def mechanism(self, k: int) -> Any:
        """The calibrated mechanism of window ``k`` (:meth:`puffer.series.SeriesPlan.mechanism`)."""
        self.window(k)
        m = self.plan.mechanism(int(k))
        want = float(self.data["scales"][int(k)])
        got = float(getattr(m.noise, "scale", math.nan))
        if not got >= want:
            raise self._bad(f"window {k}'s mechanism has noise scale {got}, below the plan's {want}")
        g, pg = m.guarantee.to_dict(), self.data["guarantee"]
        if any(g.get(f) != pg.get(f) for f in ("type", "eps", "delta")):
            raise self._bad(f"window {k}'s mechanism claims {g.get('type')}(eps={g.get('eps')}, "
                            f"delta={g.get('delta')}), not the plan's guarantee")
        return m

    # ------------------------------------------------------------------ ledger
    def record(self) -> dict[str, Any]:
        """What the ledger records of the plan, once (the ``series`` field of its ``series`` entry)."""
        d = self.data
        return {"plan_id": self.plan_id, "digest": self.digest, "plan_digest": d["plan_digest"],
                "framework": d["framework"]["digest"], "horizon": d.get("horizon"),
                "window_length": d.get("window_length"), "windows": len(self.windows),
                "eps": d.get("eps"), "delta": d.get("delta"), "scales": d.get("scales"),
                "guarantee": d["guarantee"], "theorem": d["theorem"], "binding_secret": d.get("binding_secret"),
                "signer": self.signer, "file": self.path, "verified": self.verify()}

    def entry_field(self, k: int) -> dict[str, Any]:
        """The ``series`` field of window ``k``'s pending entry."""
        a, b = self.window(k)
        return {"plan_id": self.plan_id, "digest": self.digest, "window": int(k), "windows": len(self.windows),
                "positions": [a, b], "scale": self.data["scales"][int(k)]}

    def framework_description(self) -> dict[str, Any]:
        """The entry's ``framework_description``: the plan's framework config, digest and summary."""
        fw = self.framework
        summary = {"class": type(fw).__name__, "name": getattr(fw, "name", None), "repr": repr(fw),
                   "priors": len(fw.thetas), "secrets": len(fw.secrets),
                   "secret_pairs": len(getattr(fw, "pairs", ())), "dim": int(fw.dim)}
        out: dict[str, Any] = _jsonable({"config": self.config, "digest": fw.digest(), "series_plan": self.path,
                                         "summary": summary})
        return out

    def unit_spec(self, k: int, unit: Any, order: Any, per_unit: Any, columns: list[str]) -> Any:
        """The privacy unit of window ``k``: records of unit ``unit`` at positions ``order`` of
        window ``k`` (exactly its positions per unit), the query their sum."""
        from .units import UnitSpec

        a, b = self.window(k)
        if per_unit:
            raise ParameterError("per_unit", True, "False with a series (the rows are records at positions of the "
                                 "horizon, checked against the window)")
        if len(columns) != 1:
            raise ParameterError("columns", list(columns), "one column: a series plan is for one quantity per position")
        if unit is None:
            raise ParameterError("unit", None, "the privacy-unit column (each unit's records of the window are "
                                 "summed)")
        if order is None:
            raise ParameterError("order", None, "the column holding each record's position in the series' horizon "
                                 f"(window {k}: positions {a} .. {b - 1})")
        for name, v in (("unit", unit), ("order", order)):
            if not isinstance(v, str):
                raise ParameterTypeError(name, v, "a column name")
            if v in columns:
                raise ParameterError(name, v, "a column that is not the noisy column")
        if order == unit:
            raise ParameterError("order", order, "a column other than the unit column")
        v = np.asarray(self.framework.state_values, dtype=np.float64)
        L = b - a
        return UnitSpec("records", unit, order, f"sum over the unit's records at positions [{a}, {b}) (series "
                        f"window {k})", T=L, states=np.unique(v), rng=(float(L * v.min()), float(L * v.max())),
                        window=(a, b))


def series_record_entries(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """plan id -> the ledger's record of that plan (the first ``series`` entry naming it)."""
    out: dict[str, dict[str, Any]] = {}
    for e in entries:
        s = e.get("series")
        if e.get("event") == "series" and isinstance(s, dict) and s.get("plan_id") not in out:
            out[str(s.get("plan_id"))] = {**s, "seq": e.get("seq")}
    return out


def _check_recorded_digest(rec: dict[str, Any] | None, plan_id: str, digest: str) -> None:
    if rec is not None and rec.get("digest") != digest:
        raise ParameterError("series", plan_id, f"the plan the ledger recorded for plan id {plan_id} "
                             f"(entry {rec.get('seq')}, digest {rec.get('digest')}); this plan file has digest "
                             f"{digest}: it was changed after the series' first release")


def verify_for_ledger(entries: list[dict[str, Any]], sfile: SeriesFile, progress: Any = None) -> bool:
    """Re-derive the bound of ``sfile``'s plan (:meth:`SeriesFile.verify`) unless the ledger
    (``entries``) already records this plan file (plan id and digest) as verified, with the plan
    digest it verified. Returns whether it ran. Later windows of a verified plan need only their
    digest to match the ledger's record (:func:`check_series_release`)."""
    rec = series_record_entries(entries).get(str(sfile.plan_id))
    _check_recorded_digest(rec, str(sfile.plan_id), str(sfile.digest))     # (refused first: no re-check)
    v = None if rec is None else rec.get("verified")
    if rec is not None and rec.get("digest") == sfile.digest and isinstance(v, dict) \
            and v.get("plan_digest") == sfile.data.get("plan_digest") == str(sfile.plan.digest()):
        return False
    sfile.verify(progress)
    return True


def check_series_release(entries: list[dict[str, Any]], new: dict[str, Any], *, units: Any = None,
                         ledger: str | None = None) -> bool:
    """Refuse window ``new`` (its pending entry's fields with ``series``; ``units``: its sorted unit
    hashes, None for every unit) if the ledger's record of its plan id has another digest, or a
    counted release of the same window already covers one of its units. Returns whether the
    plan still has to be recorded. A re-run of a counted release changes nothing."""
    from .totals import counted_releases
    from .unitsets import load_units

    s = new.get("series")
    if not isinstance(s, dict):
        return False
    rec = series_record_entries(entries).get(str(s["plan_id"]))
    _check_recorded_digest(rec, str(s["plan_id"]), str(s["digest"]))
    root = new.get("rerun_of")
    counted = counted_releases(entries)
    if root is not None and any(e.get("release_id") == root for e in counted):
        return rec is None
    mine = None if units is None else np.asarray(units, dtype=np.uint64)
    for e in counted:
        es = e.get("series")
        if not isinstance(es, dict) or es.get("plan_id") != s["plan_id"] or es.get("window") != s["window"]:
            continue
        theirs = load_units(e, ledger or "")
        overlap = mine is None or theirs is None or bool(np.intersect1d(mine, theirs).size)
        if overlap:
            raise ParameterError("window", s["window"], f"a window of series {s['plan_id']} not yet released on "
                                 f"these units: release {e.get('release_id')} published window {s['window']} on "
                                 "units of this release (a second release of a window is not in the plan; "
                                 "rerun= / --rerun reproduces the recorded one)")
    return rec is None


def series_status(entries: list[dict[str, Any]], totals: dict[str, Any]) -> list[dict[str, Any]]:
    """Per plan recorded in the ledger (what ``puffer ledger show`` prints): ``plan_id``,
    ``digest``, ``guarantee``, ``theorem``, ``windows`` (how many), ``published`` (window ->
    release ids of counted releases), ``pending`` (windows not released yet), ``totals`` (the
    populations of units that hold its releases, with their total)."""
    from .totals import counted_releases

    recs = series_record_entries(entries)
    counted = counted_releases(entries)
    out = []
    for pid, rec in recs.items():
        pub: dict[int, list[str]] = {}
        for e in counted:
            es = e.get("series")
            if isinstance(es, dict) and es.get("plan_id") == pid:
                pub.setdefault(int(es["window"]), []).append(str(e.get("release_id")))
        ids = {r for v in pub.values() for r in v}
        pops = [{"label": label, "units": t.get("units"), "guarantee": t.get("guarantee"),
                 "theorem": t.get("theorem"), "reason": t.get("reason")}
                for label, t in totals.items() if ids & set(t.get("release_ids") or [])]
        n = int(rec.get("windows") or 0)
        out.append({"plan_id": pid, "digest": rec.get("digest"), "guarantee": rec.get("guarantee"),
                    "theorem": rec.get("theorem"), "binding_secret": rec.get("binding_secret"), "windows": n,
                    "window_length": rec.get("window_length"), "horizon": rec.get("horizon"),
                    "signer": rec.get("signer"), "published": {str(k): v for k, v in sorted(pub.items())},
                    "pending": [k for k in range(n) if k not in pub], "totals": pops})
    return out
