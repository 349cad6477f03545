"""One release, from key to ledger: what the file, Spark and Dask paths share (driver side).

Usage (the order of operations that makes a release crash-safe)::

    rel = puffer.publish.begin_release(ledger="ledger.jsonl", columns=["kwh"], plan=plan,
                                  key="release.key", input_sha256=digest, config={...})
    streams = rel.streams(["kwh"])          # column -> puffer.sampling.Stream (picklable)
    ...  # add noise: value p of streams[c] is the noise at position p (row or unit position)
    rel.pending(output_sha256, rows, output=path)   # durable BEFORE the output is published
    ...  # publish (rename into place, fsync)
    rel.commit()                             # the completion entry

``begin_release`` validates everything before any work: the key (:mod:`puffer.publish.keys`; an
integer ``seed=`` is refused), the ledger (the one ``PUFFER_LEDGER`` names, if set; writable
folder, intact chain; dangling pending entries of earlier killed runs are resolved), the composition rules of
:mod:`puffer.publish.totals` (a release that would leave a unit without a total guarantee is
refused unless ``allow_uncomposed=True``, which is recorded; ``budget=`` caps the total), and
for ``rerun=RELEASE_ID`` that the recorded release had the same key id, input digest and
configuration (its nonce is then reused, so the bytes are reproduced; :meth:`Release.pending`
refuses a rerun whose output digest differs from the recorded one). Anything else gets a fresh
128-bit nonce, hence fresh noise (:mod:`puffer.publish.streams`).

The ledger never sees the key: only its random id and the nonce. Spark and Dask writers call
``rel.commit(output_sha256, rows)`` directly (it writes the pending and the completed entry).
"""
from __future__ import annotations

import datetime as _dt
import os
import secrets as _secrets
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError, PufferError
from .digest import output_state
from .keys import Key, as_key, refuse_seed
from .ledger import LEDGER_VERSION, Ledger, ledger_path
from .streams import check_nonce, new_nonce, release_stream
from .unitsets import ALL, UNIT_HASH, UnitHasher, describe_units

if TYPE_CHECKING:
    from ..sampling import KeyedStream

__all__ = ["Release", "begin_release", "STREAM_NAME", "fit_record", "fit_counts_digest"]

STREAM_NAME = ("chacha20 (RFC 8439, counter mode, layout cpp/sampling/keyed_stream.hpp); key = "
               "HMAC-SHA256(release key, 'puffer/v2/stream' || 0x00 || nonce || 0x00 || column)")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class LedgerView:
    """What a release reads of its ledger, from one read of the file and its index
    (:class:`puffer.publish.index.LedgerState`): release states, nonces, the registry of units
    and the composition rules of :mod:`puffer.publish.totals` for a new release. Where the index
    cannot answer exactly (:attr:`~puffer.publish.index.LedgerState.exact`), every entry is
    parsed and the rules run over them as before."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.st, self.data = ledger.state()
        self._entries: list[dict[str, Any]] | None = None

    def entries(self) -> list[dict[str, Any]]:
        """Every entry (verified by :meth:`puffer.publish.ledger.Ledger.state`), parsed once."""
        if self._entries is None:
            from .index import full_lines

            self._entries = self.ledger._parse(list(full_lines(self.st, self.data)))
        return self._entries

    def entry(self, seq: int) -> dict[str, Any]:
        return self.ledger._parse([self.st.line(self.data, seq)])[0]

    def release(self, rid: str) -> dict[str, Any] | None:
        """The pending entry of release ``rid`` (None: not in the ledger)."""
        r = self.st.releases.get(rid)
        return None if r is None else self.entry(int(r[1]))

    def pending(self) -> list[tuple[str, dict[str, Any]]]:
        """(release id, pending entry) of every release without completion or resolution."""
        return [(rid, self.entry(int(r[1]))) for rid, r in self.st.releases.items() if r[0] == "pending"]

    def registered(self, secret_id: str | None) -> np.ndarray:
        if not self.st.exact:
            return registered_units(self.entries(), secret_id, self.ledger.path)
        got = self.st.registry.get(secret_id)
        return np.zeros(0, dtype=np.uint64) if got is None else got

    def composition(self, new: dict[str, Any], *, allow_uncomposed: bool, budget: Any, units: Any
                    ) -> dict[str, Any]:
        """:func:`puffer.publish.totals.check_new_release` of ``new`` on this ledger."""
        from .totals import RERUN_NOTE, check_new_release

        st = self.st
        u = new.get("units") if isinstance(new.get("units"), dict) else {}
        scheme = None if units is None else (u.get("secret"), u.get("hash"))  # type: ignore[union-attr]
        if not st.exact or (scheme is not None and st.schemes and st.schemes != {scheme}):
            return check_new_release(self.entries(), new, allow_uncomposed=allow_uncomposed, budget=budget,
                                     units=units, ledger=self.ledger.path)
        root = new.get("rerun_of")
        if root is not None:
            if root in st.root_of:
                return {"rerun_of": root, "note": RERUN_NOTE}
            new = {**new, "release_id": root}
        hashed = None if units is None else np.unique(np.asarray(units, dtype=np.uint64))
        cands = st.populations_with(hashed)
        ks = sorted({k for m, _ in cands for k in m})
        pos = {k: i for i, k in enumerate(ks)}
        rels = [st.record(k) for k in ks] + [new]
        k_new = len(rels) - 1
        pops = [{"members": sorted(pos[k] for k in m) + [k_new], "units": c, "note": None} for m, c in cands]
        return check_new_release([], new, allow_uncomposed=allow_uncomposed, budget=budget,
                                 populated=(rels, pops))


class Release:
    """A release in progress (see the module docstring). Attributes: ``release_id``, ``nonce``,
    ``key`` (:class:`~puffer.publish.keys.Key`), ``ledger`` (:class:`~puffer.publish.ledger.Ledger`),
    ``entry`` (the fields of the pending entry, without output digest until :meth:`pending`)."""

    def __init__(self, ledger: Ledger, key: Key, nonce: str, fields: dict[str, Any], rerun_of: dict[str, Any] | None,
                 allow_uncomposed: bool, budget: Any, units: Any = None, hasher: UnitHasher | None = None,
                 new_units: bool = False, series: Any = None):
        #: the SeriesFile of a series window release (its plan is recorded once, before the pending entry)
        self.series = series
        self.ledger = ledger
        self.new_units = new_units
        self.units, self.hasher = units, hasher
        self.key = key
        self.nonce = nonce
        self.release_id = _secrets.token_hex(16)
        self.rerun_of = rerun_of
        self.allow_uncomposed = allow_uncomposed
        self.budget = budget
        self.entry = dict(fields)
        self.state = "open"

    def __repr__(self) -> str:
        return f"Release(id={self.release_id!r}, ledger={self.ledger.path!r}, state={self.state!r})"

    def stream(self, column: Any) -> KeyedStream:
        """The noise stream of ``column`` (position p = noise at row/unit position p)."""
        return release_stream(self.key, self.nonce, column)

    def streams(self, columns: list[str]) -> dict[str, KeyedStream]:
        return {c: self.stream(c) for c in columns}

    def pending(self, output_sha256: str, rows: int, *, output: str | None = None,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Write the pending entry (durable when this returns). Call it once the output is
        complete and durable under a temporary name, before it appears at its final path."""

        if self.state != "open":
            raise ParameterError("release", self.release_id, f"an open release (it is {self.state})")
        if not isinstance(output_sha256, str) or not output_sha256.startswith("sha256:"):
            raise ParameterTypeError("output_sha256", output_sha256, "'sha256:<hex>' of the output")
        if self.rerun_of is not None and output_sha256 != self.rerun_of.get("output_sha256"):
            self.state = "aborted"
            raise ParameterError("rerun", self.rerun_of.get("release_id"),
                                 f"a re-run that reproduces the recorded output ({self.rerun_of.get('output_sha256')}"
                                 f"); it gave {output_sha256}: a different key, input or puffer version. "
                                 "Nothing was published")
        e = dict(self.entry)
        e.update(event="pending", release_id=self.release_id, time=_now(), output_sha256=output_sha256,
                 rows=int(rows), output=None if output is None else os.path.abspath(output), **(extra or {}))
        with self.ledger.locked():
            view = LedgerView(self.ledger)
            record_plan = False
            if self.series is not None:  # (puffer.publish.series) the plan as recorded, the window not released yet
                from .series import check_series_release
                record_plan = check_series_release(view.entries(), e, units=self.units, ledger=self.ledger.path)
            # the composition rules again, under the lock (another process may have released since)
            e["composition"] = view.composition(e, allow_uncomposed=self.allow_uncomposed, budget=self.budget,
                                                units=self.units)
            # the ledger's registry of units (puffer.publish.registry), under the lock too
            reg = _registry(view, e, self.units, self.hasher, self.new_units)
            if reg is not None:
                e["unit_registry"] = reg
            # the unit set (a large one in a side file, durable before the entry that names it)
            e["units"] = describe_units(self.units, self.hasher, self.ledger.path, self.release_id)
            if record_plan:   # the plan, once per ledger, before its first window's entry
                self.ledger.append({"puffer_ledger": LEDGER_VERSION, "event": "series", "time": _now(),
                                    "series": self.series.record()})
            self.entry = self.ledger.append(e)
        self.state = "pending"
        return self.entry

    def commit(self, output_sha256: str | None = None, rows: int | None = None, *, output: str | None = None,
               extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The completion entry (writes the pending entry first if :meth:`pending` was not
        called: then ``output_sha256`` and ``rows`` are required). Returns the pending entry."""
        if self.state == "open":
            if output_sha256 is None or rows is None:
                raise ParameterError("output_sha256", output_sha256, "the output's digest and rows (no pending "
                                     "entry was written)")
            self.pending(output_sha256, rows, output=output, extra=extra)
        if self.state != "pending":
            raise ParameterError("release", self.release_id, f"a pending release (it is {self.state})")
        self.ledger.append({"puffer_ledger": LEDGER_VERSION, "event": "completed", "release_id": self.release_id,
                            "time": _now(), "output_sha256": self.entry["output_sha256"]})
        self.state = "completed"
        return self.entry

    def abort(self, reason: str) -> None:
        """Record that a pending release was not published (nothing to do before pending). An
        aborted release counts for nothing in the totals, so a release whose output is at its
        path with the recorded digest cannot be recorded aborted: it stays pending (counted) and
        the next release resolves it as published."""
        if self.state == "pending" and output_state(self.entry) == "published":
            raise ParameterError("release", self.release_id, f"a release that was not published: its output "
                                 f"{self.entry.get('output')} is there with the recorded digest, so it counts (the "
                                 "ledger never records less than was published)")
        if self.state == "pending":
            self.ledger.append({"puffer_ledger": LEDGER_VERSION, "event": "resolved", "outcome": "aborted",
                                "release_id": self.release_id, "time": _now(), "reason": str(reason)[:200]})
        self.state = "aborted"


def resolve_dangling(ledger: Ledger, *, is_busy: Any = None) -> list[dict[str, Any]]:
    """Resolve pending entries of killed runs: ``published`` if the output is at its path with
    the recorded digest, else ``unknown`` (the run may have died before the rename, or the file
    was moved or replaced since: the totals count it, the safe side). Only a run that knows it
    did not publish records ``aborted`` (:meth:`Release.abort`). ``is_busy(output_path)``: True
    while another process holds that output's lock (its release is still running: left alone)."""
    done = []
    with ledger.locked():
        for rid, e in LedgerView(ledger).pending():
            if is_busy is not None and e.get("output") and is_busy(e["output"]):
                continue
            outcome = "published" if output_state(e) == "published" else "unknown"
            done.append(ledger.append({"puffer_ledger": LEDGER_VERSION, "event": "resolved", "outcome": outcome,
                                       "release_id": rid, "time": _now(),
                                       "reason": "pending entry of an interrupted run"}))
    return done


#: what an entry's ``fit.counts_digest`` is
FIT_COUNTS_DIGEST = ("HMAC-SHA256 keyed by the release key, of 'puffer/v1/fit-counts' || 0x00 || the canonical JSON of "
                     "the fit's transition counts (groups x phases x from x to)")


def fit_counts_digest(counts: Any, key: Key) -> str:
    """The keyed digest of a fit's transition counts that a ledger entry records instead of them
    (:data:`FIT_COUNTS_DIGEST`): whoever holds the release key can check a refit against it;
    without the key nothing about the counts follows (a plain hash of small integer counts
    whose total is recorded would be inverted by trying every matrix)."""
    import hashlib
    import hmac
    import json

    text = json.dumps(np.asarray(counts, dtype=np.int64).tolist(), separators=(",", ":")).encode("ascii")
    return "hmac-sha256:" + hmac.new(key.secret, b"puffer/v1/fit-counts\x00" + text, hashlib.sha256).hexdigest()


def fit_record(fit: dict[str, Any], key: Key) -> dict[str, Any]:
    """The ledger's record of a fitted Theta (:meth:`puffer.models.fit.MarkovFit.to_dict`) with
    its exact transition counts replaced by :func:`fit_counts_digest` (the counts of a Theta
    fitted from the released units are a statistic of their data, published with no noise)."""
    if fit.get("private") is not None:
        # a private fit's counts are noised (a DP release of the units, counted in their totals)
        return dict(fit)
    out = {k: v for k, v in fit.items() if k != "counts"}
    if "counts" in fit:
        out["counts_digest"] = fit_counts_digest(fit["counts"], key)
        out["counts_digest_of"] = FIT_COUNTS_DIGEST
    return out


def fit_on_release(fit: Any, units: Any, hasher: UnitHasher | None, allow: bool,
                   unit_column: str | None = None) -> dict[str, Any] | None:
    """The rule for a release with a Theta fitted from traces (issue 40): the fit is a release of
    its units too. A private fit (``fit_markov(private=EPS)``) counts its eps in the totals of
    the units (:mod:`puffer.publish.totals`) -- EPS per unit of the fit's unit column, so the
    release must name the same ``unit_column`` (a released unit holding several of the fit's
    units would carry several times EPS), else it is refused unless ``allow``; a fit on the
    exact counts of units this release publishes -- or that may be (rows naming no unit, a fit
    on an array, ids that cannot be compared) -- is refused unless ``allow``
    (``--allow-fit-on-release``). An allowance is recorded. Returns the entry's
    ``fit_on_release`` record (None without a fitted framework)."""
    if not isinstance(allow, bool):
        raise ParameterTypeError("allow_fit_on_release", allow, "True or False")
    if fit is None:
        if allow:
            raise ParameterError("allow_fit_on_release", True, "False for a release without a fitted Theta "
                                 "(puffer.models.fit_markov): there is no fit to allow")
        return None
    if fit.private is not None:
        rec = {"private": True, "eps": fit.private, "id": fit.private_fit.id}
        fit_unit = fit.private_fit.unit
        if fit_unit is not None and fit_unit == unit_column:
            if allow:
                raise ParameterError("allow_fit_on_release", True, f"False: the fit is private (eps {fit.private:g} "
                                     f"per unit of column {fit_unit!r}, counted in the units' totals)")
            return rec
        if not allow:
            of = "the rows of an array" if fit_unit is None else f"unit column {fit_unit!r}"
            raise ParameterError("allow_fit_on_release", False,
                                 f"True to release anyway (--allow-fit-on-release, recorded): the private fit's eps "
                                 f"{fit.private:g} is per unit of its traces ({of}) and this release's unit column "
                                 f"is {unit_column!r}; if a released unit holds several of the fit's units, its share "
                                 "of the fit is that many times eps, more than the total counts. Fit on a table whose "
                                 "unit column is the release's")
        return {**rec, "fit_unit": fit_unit, "allowed": True}
    ids = getattr(fit, "unit_ids", None)
    shared: int | None = None
    if units is not None and ids is not None and hasher is not None:
        try:
            shared = int(np.intersect1d(hasher.unit_set(list(ids)), np.asarray(units, dtype=np.uint64)).size)
        except PufferError:
            shared = None              # ids that cannot be hashed (floats): taken to overlap
    if shared == 0:
        if allow:
            raise ParameterError("allow_fit_on_release", True, "False: the fit's traces share no unit with this "
                                 "release, nothing to allow")
        return {"private": False, "shared_units": 0}
    if not allow:
        why = (f"{shared} of its units are released here" if shared else
               "it may share units with this release (the fit's unit ids cannot be compared with the release's)")
        raise ParameterError("allow_fit_on_release", False,
                             f"True to release anyway (--allow-fit-on-release, recorded in the entry): Theta was "
                             f"fitted without private= on traces of the released units ({why}), and the fit's "
                             "exact counts are a release of those units that no total counts; or fit with "
                             "fit_markov(..., private=EPS) (its eps is counted) or on other units")
    return {"private": False, "shared_units": "unknown" if shared is None else shared, "allowed": True}


def _config_diff(old: Any, new: Any) -> str | None:
    if old == new:
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            if old.get(k) != new.get(k):
                return f"{k}: recorded {str(old.get(k))[:60]}, now {str(new.get(k))[:60]}"
    return f"recorded {str(old)[:60]}, now {str(new)[:60]}"


def begin_release(*, ledger: str | os.PathLike[str] | Ledger, columns: list[str], plan: Any, key: Any = None,
                  insecure_seed: Any = None, seed: Any = None, rerun: str | None = None,
                  input_sha256: str | None = None, input: str | None = None, config: dict[str, Any] | None = None,
                  unit: dict[str, Any] | None = None, framework: Any = None, path_kind: str = "file",
                  allow_uncomposed: bool = False, budget: Any = None, secure: bool = False,
                  post_processing: list[dict[str, Any]] | None = None, signing_key: Any = None,
                  units: Any = None, unit_hasher: UnitHasher | None = None, is_busy: Any = None,
                  noise_lattice: dict[str, Any] | None = None, new_units: bool = False,
                  series: Any = None,
                  allow_fit_on_release: bool = False) -> Release:
    """Validate a release and open it (see the module docstring); nothing is written yet.

    ``plan``: the :class:`~puffer.publish.plan.NoisePlan`; ``config``: every option that changes the
    output (checked equal on ``rerun``); ``unit``: the privacy unit description
    (:mod:`puffer.publish.units`); ``framework``: the full framework description (the config dict
    of a framework file) to embed; ``path_kind``: "file", "spark" or "dask";
    ``post_processing``: the descriptions of the post-processing steps applied after the noise
    (:class:`puffer.publish.noise.PostStep`), recorded in the entry; ``signing_key``: signs every
    entry and checkpoint of the release (:mod:`puffer.publish.ledger`; a signed ledger needs it);
    ``units``: the sorted keyed hashes of the unit ids the release touches, by ``unit_hasher``
    (:mod:`puffer.publish.unitsets`), or None when its rows name no unit (then it touches every
    unit: the safe side); ``noise_lattice``: the description of the lattice of the release's
    noise (:meth:`puffer.lattice.LatticePlan.describe`: granularity, law, padding), recorded as
    the entry's ``noise_lattice`` (None: float noise or no noise); ``new_units``: the release
    declares unit ids the ledger has not registered (:mod:`puffer.publish.registry`); ``series``:
    ``(SeriesFile, window)`` of a series window release (:mod:`puffer.publish.series`: the
    entry's ``series`` field, the plan's guarantee as its ``guarantee``, the plan recorded once).

    >>> import os, tempfile, puffer.io as pio
    >>> d = tempfile.mkdtemp()
    >>> rel = pio.begin_release(ledger=os.path.join(d, "l.jsonl"), columns=["x"],
    ...                         plan=pio.resolve(("laplace", {"b": 1.0})), key=os.urandom(32))
    >>> e = rel.commit("sha256:" + "0" * 64, 3)
    >>> e["event"], e["nonce"] == rel.nonce, len(pio.read_ledger(os.path.join(d, "l.jsonl")))
    ('pending', True, 2)
    """
    from .._version import __version__

    refuse_seed(seed)
    if not isinstance(allow_uncomposed, bool):
        raise ParameterTypeError("allow_uncomposed", allow_uncomposed, "True or False")
    if path_kind not in ("file", "spark", "dask"):
        raise ParameterError("path_kind", path_kind, "'file', 'spark' or 'dask'")
    if isinstance(ledger, Ledger):
        led = ledger if signing_key is None or ledger.signing_key is not None else Ledger(ledger.path,
                                                                                          signing_key=signing_key)
    else:
        led = Ledger(ledger, signing_key=signing_key)
    ledger_path(led.path, led.path)  # with PUFFER_LEDGER set, no release into another ledger
    led.check_writable()
    led.check_signer()  # an unsigned release into a signed ledger, or another key: refused before any work
    k = as_key(key, insecure_seed=insecure_seed)
    if secure and (key is not None or insecure_seed is not None):
        raise ParameterError("key", "given", "no key in secure mode (its lattice noise comes from OS entropy "
                             "only and is never reproducible)")
    if rerun is not None and secure:
        raise ParameterError("rerun", rerun, "None in secure mode (nothing is reproducible there)")
    resolve_dangling(led, is_busy=is_busy)
    view = LedgerView(led)
    desc = plan.describe()
    if isinstance(desc.get("fit"), dict):  # a fitted Theta: its exact counts never go to the ledger
        desc = {**desc, "fit": fit_record(desc["fit"], k)}
    post = list(post_processing or [])
    cfg = {"columns": list(columns), "plan": desc, "unit": unit, "input_sha256": input_sha256,
           "secure": bool(secure), **(config or {})}
    if post:  # (absent when empty: re-runs of releases recorded before the field existed stay valid)
        cfg["post_processing"] = post
    rerun_of = None
    if rerun is not None:
        if not isinstance(rerun, str):
            raise ParameterTypeError("rerun", rerun, "a release id from the ledger")
        old = view.release(rerun)
        if old is None:
            raise ParameterError("rerun", rerun, f"the id of a release recorded in {led.path}")
        if old.get("rerun_of"):
            old = view.release(old["rerun_of"]) or old
        if not k.rerunnable:
            raise ParameterError("key", None, f"the key of release {rerun} (a key file or bytes: a re-run needs the "
                                 "same key; fresh OS entropy cannot reproduce anything)")
        if old["key"]["source"] == "file" and old["key"]["key_id"] != k.key_id:
            raise ParameterError("key", k.key_id, f"the key of release {rerun} (key id {old['key']['key_id']})")
        if bool(old["key"].get("insecure")) != k.insecure:
            raise ParameterError("key", k.source, f"the kind of key release {rerun} used ({old['key']['source']})")
        why = _config_diff(old.get("config"), cfg)
        if why is not None:
            afterwards = why.startswith(("clamp:", "lattice:", "post_processing:"))
            raise ParameterError("rerun", rerun, f"the same inputs and configuration as the recorded release (a "
                                 f"re-run reuses its nonce, so different data would publish exact differences); "
                                 f"differs in {why}" + ("; to clamp what it published, run `puffer clamp "
                                                        "PUBLISHED OUT --range A,B` on its output (post-processing, "
                                                        "recorded)" if afterwards else ""))
        nonce = check_nonce(old["nonce"])
        rerun_of = old
    else:
        nonce = new_nonce()
        if not secure:
            used = view.st.nonces
            while nonce in used:  # 2^-128; a fresh nonce is never one the ledger has seen
                nonce = new_nonce()
    fields = {
        "puffer_ledger": LEDGER_VERSION, "puffer_version": __version__, "path": path_kind,
        "input": None if input is None else os.path.abspath(input), "input_sha256": input_sha256,
        "columns": list(columns), "unit": unit, **desc, "post_processing": post,
        "framework_description": framework,
        "key": k.describe(), "nonce": None if secure else nonce,
        "rng": {"mode": "secure" if secure else "keyed-chacha20", "stream": None if secure else STREAM_NAME},
        "noise_lattice": noise_lattice,
        "rerun_of": None if rerun_of is None else rerun_of["release_id"],
        "allow_uncomposed": allow_uncomposed, "budget": budget, "config": cfg,
    }
    sfile = None
    if series is not None:
        from .series import SeriesFile, check_series_release, verify_for_ledger

        sfile, window = series
        if not isinstance(sfile, SeriesFile):
            raise ParameterTypeError("series", sfile, "(SeriesFile, window)")
        fields["series"] = sfile.entry_field(window)   # (its guarantee: the window mechanism's, the plan's)
    if units is not None:
        if unit_hasher is None:
            raise ParameterError("unit_hasher", None, "the ledger's UnitHasher that made the unit hashes")
        units = np.unique(np.asarray(units, dtype=np.uint64))
    # what the composition rules read now; the full unit set is written with the pending entry
    fields["units"] = dict(ALL) if units is None else {"kind": "ids", "count": int(units.size), "hash": UNIT_HASH,
                                                       "secret": None if unit_hasher is None else unit_hasher.secret_id}
    on = fit_on_release(getattr(getattr(plan.mechanism, "framework", None), "fit", None), units, unit_hasher,
                        allow_fit_on_release, (unit or {}).get("column") if isinstance(unit, dict) else None)
    if on is not None:
        fields["fit_on_release"] = on
    # refuse early, before any work (checked again under the lock in pending())
    if sfile is not None:
        check_series_release(view.entries(), {**fields, "release_id": None}, units=units, ledger=led.path)
        verify_for_ledger(view.entries(), sfile)   # the plan's bound, re-derived unless the ledger verified it
    view.composition(fields, allow_uncomposed=allow_uncomposed, budget=budget, units=units)
    _registry(view, fields, units, unit_hasher, new_units, warn=False)
    return Release(led, k, nonce, fields, rerun_of, allow_uncomposed, budget, units, unit_hasher, new_units, sfile)


def registered_units(entries: list[dict[str, Any]], secret_id: str | None, ledger: str) -> np.ndarray:
    """The sorted keyed hashes of every unit released into the ledger (``entries``) under unit
    secret ``secret_id``: its registry (:mod:`puffer.publish.registry`; pending entries of any
    outcome: a unit once recorded stays registered)."""
    from .unitsets import load_units

    sets = []
    for e in entries:
        u = e.get("units")
        if e.get("event") != "pending" or not isinstance(u, dict) or u.get("kind") != "ids" or \
                u.get("secret") != secret_id:
            continue
        h = load_units(e, ledger)
        if h is not None:
            sets.append(h)
    return np.unique(np.concatenate(sets)) if sets else np.zeros(0, dtype=np.uint64)


def _registry(view: LedgerView, fields: dict[str, Any], units: Any, hasher: UnitHasher | None,
              new_units: bool, *, warn: bool = True) -> dict[str, Any] | None:
    """The ledger's registry check of a release (:func:`puffer.publish.registry.check_registry`);
    a re-run publishes recorded units again and is not checked."""
    import warnings

    from .registry import UnitRegistryWarning, check_registry

    if fields.get("rerun_of") is not None:
        return None
    reg = view.registered(None if hasher is None else hasher.secret_id) if units is not None \
        else np.zeros(0, dtype=np.uint64)
    with warnings.catch_warnings():
        if not warn:
            warnings.simplefilter("ignore", UnitRegistryWarning)
        return check_registry(reg, units, new_units=new_units)
