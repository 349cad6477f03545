"""The release preamble: what every engine checks before any work, in one place.

:func:`prepare` is called by the file, Spark and Dask engines with the mechanism, the columns
and the :class:`~puffer.publish.options.PublishOptions`, before anything is read or computed:

1. an integer ``seed`` is refused (:data:`puffer.publish.keys.SEED_REFUSED`);
2. the ledger: resolved (``options.ledger``, else ``PUFFER_LEDGER``, else the engine's default;
   with ``PUFFER_LEDGER`` set, no other ledger: :func:`ledger_path`), not the input or the
   output (nor is its checkpoint, unit secret or a key file), its folder writable, its chain and signatures intact, the signing key its own; the
   ledger's unit secret (:mod:`puffer.publish.unitsets`) when the release has a unit column;
3. the mechanism resolved (:func:`puffer.publish.plan.resolve`) and checked against the columns;
   zero sensitivity (no noise at all) needs ``allow_unnoised``;
4. the privacy unit (:func:`puffer.publish.units.unit_spec`);
5. the lattice (:mod:`puffer.lattice`; an impossible one, a noise without a lattice law or a
   mechanism not certified on a lattice is refused now, naming ``float_noise``; a plain noise
   of fewer than :data:`~puffer.publish.values.RESOLUTION` steps of the ``granularity`` given
   needs ``allow_unnoised``), or with ``float_noise`` no ``granularity`` and a noise without a
   lattice law (Laplace and Gaussian noise, which have one, are refused with it);
6. the key (:func:`puffer.publish.keys.as_key`, checked before the mechanism is resolved, which
   may fit a model and calibrate): a bad key file is refused before any work; no key, and no
   ``rerun``, in secure mode;
7. the configuration recorded in the ledger entry (what a re-run must match) and the framework
   description embedded in it;
8. with ``series``/``window`` (:mod:`puffer.publish.series`): the plan file verified (digest,
   signature, by the ledger's key for a signed ledger), the window one of the plan's, a
   framework given the plan's; the mechanism is the plan's for that window and the unit
   spec checks the window's positions.

:meth:`Prepared.begin` then opens the release (:func:`puffer.publish.release.begin_release`:
nonce, composition rules) once the engine knows the input's digest, and
:meth:`Prepared.noise` gives the :class:`~puffer.publish.noise.ColumnNoise` the engine adds.
"""
from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ParameterError
from .keys import Key, as_key, refuse_seed
from .ledger import Ledger, checkpoint_path, ledger_path
from .noise import ColumnNoise, PostStep, secure_streams
from .options import PublishOptions
from .plan import NoisePlan, as_columns, resolve
from .units import UnitSpec, check_order_type, check_unit_type, unit_spec
from .unitsets import UnitHasher, secret_file, unit_hasher, units_folder
from .values import RESOLUTION

if TYPE_CHECKING:
    from .release import Release

__all__ = ["Prepared", "prepare", "framework_description", "ledger_path"]


def framework_description(mechanism: Any, plan: NoisePlan) -> Any:
    """The full framework description to embed in the entry (JSON-able): the file's config
    (priors, T, states, secrets), or what a Mechanism object exposes (repr and digest)."""
    m = plan.mechanism
    if m is None:
        return None
    fw = m.framework
    if fw is None:  # a mechanism calibrated from a given sensitivity has no framework
        desc: Any = {"repr": repr(m), "digest": None, "summary": {"class": None, "repr": repr(m)}}
    elif isinstance(mechanism, dict):
        from ..config import validate_config
        desc = {"config": validate_config(mechanism), "digest": fw.digest()}
    elif isinstance(mechanism, (str, os.PathLike)):
        from ..config import load_config
        desc = {"config": load_config(mechanism), "file": os.path.abspath(os.fspath(mechanism)),
                "digest": fw.digest()}
    else:
        desc = {"repr": repr(fw), "digest": fw.digest(), "secrets": len(fw.secrets),
                "priors": [repr(t) for t in fw.thetas]}
    if fw is not None:  # what `puffer ledger show` prints of the framework and its Theta
        desc["summary"] = {"class": type(fw).__name__, "name": getattr(fw, "name", None), "repr": repr(fw),
                           "priors": len(fw.thetas), "secrets": len(fw.secrets),
                           "secret_pairs": len(getattr(fw, "pairs", ())), "dim": int(fw.dim)}
    return json.loads(json.dumps(desc, default=str))


def _noise_scale(plan: NoisePlan) -> float | None:
    """The noise's scale (for the resolution check of :mod:`puffer.publish.values`), or None."""
    if plan.kind is None:
        return None
    s = plan.describe().get("scale")
    if s is None:
        s = plan.params.get("scale")
    return None if s is None else float(s)


@dataclass
class Prepared:
    """A validated release, not yet opened (see the module docstring)."""

    options: PublishOptions
    columns: list[str]
    plan: NoisePlan
    spec: UnitSpec
    ledger: Ledger
    key: Key | None
    config: dict[str, Any]
    framework: Any
    hasher: UnitHasher | None = None
    post: tuple[PostStep, ...] = field(default=())
    series: Any = None   # (SeriesFile, window) of a series window release
    #: the unit secret file this release created (an unsigned ledger's first release with a unit
    #: column), else None: removed again by :meth:`unit_secret_kept_if_recorded` if no entry uses it
    created_secret: str | None = None

    @contextlib.contextmanager
    def unit_secret_kept_if_recorded(self) -> Iterator[None]:
        """Around an engine's work: when it ends, the unit secret this release created is removed
        unless an entry of the ledger names it (checked under the ledger's lock), so a refused or
        failed release leaves no ``L.unit-secret`` behind. Nothing else has been hashed under that
        secret by then except a release running at the same moment, still unrecorded: its unit
        set then names a secret that is gone, and a set under an unknown secret is taken to
        overlap every other (the safe side, :mod:`puffer.publish.unitsets`)."""
        try:
            yield
        finally:
            if self.created_secret is not None and self.hasher is not None:
                # best effort, never masking the release's own error: a file left is only clutter
                with contextlib.suppress(Exception):
                    self._remove_unused_secret(self.created_secret, self.hasher.secret_id)

    def _remove_unused_secret(self, path: str, secret_id: str) -> None:
        if not os.path.exists(self.ledger.path):  # no ledger: no entry (and locking would create one)
            if _secret_id(path) == secret_id:
                os.remove(path)
            return
        with self.ledger.locked():
            used = any(isinstance(e.get("units"), dict) and e["units"].get("secret") == secret_id
                       for e in self.ledger.entries(check=False))
            if not used and _secret_id(path) == secret_id:
                os.remove(path)

    def begin(self, *, input_sha256: str, path_kind: str, input: str | None = None, units: Any = None,
              is_busy: Any = None) -> Release:
        """Open the release (:func:`puffer.publish.release.begin_release`): nonce, re-run checks,
        composition rules on the units it touches. ``units``: the keyed hashes (by
        :attr:`hasher`) of the unit ids, required when the release has a unit column. Nothing
        is written yet."""
        from .release import begin_release

        if self.spec.column is not None and units is None:
            raise ParameterError("units", None, f"the keyed hashes of the ids in unit column {self.spec.column!r} "
                                 "(Prepared.hasher)")
        o = self.options
        return begin_release(ledger=self.ledger, columns=self.columns, plan=self.plan, key=self.key,
                             rerun=o.rerun, input_sha256=input_sha256, input=input, config=self.config,
                             unit=self.spec.describe(), framework=self.framework, path_kind=path_kind,
                             allow_uncomposed=o.allow_uncomposed, budget=o.budget, secure=o.secure,
                             post_processing=[p.describe() for p in self.post], units=units,
                             unit_hasher=self.hasher, is_busy=is_busy, new_units=o.new_units,
                             allow_fit_on_release=o.allow_fit_on_release,
                             noise_lattice=None if self.noise_lattice is None else self.noise_lattice.describe(),
                             series=self.series)

    def check_input_types(self, type_of: Any) -> None:
        """The declared types of the input's unit and order columns (``type_of(name)``: an Arrow
        type, or a pandas/numpy dtype), before any work (:func:`puffer.publish.units.check_unit_type`,
        :func:`~puffer.publish.units.check_order_type`); each engine calls it once it has the schema."""
        if self.spec.column is not None:
            check_unit_type(type_of(self.spec.column), self.spec.column)
        if self.spec.order is not None:
            check_order_type(type_of(self.spec.order), self.spec.order)

    @property
    def noise_lattice(self) -> Any:
        """The release's :class:`~puffer.lattice.LatticePlan` (None: float noise, or no noise)."""
        o = self.options
        if o.float_noise or self.plan.kind is None:
            return None
        return self.plan.lattice_plan(o.granularity)

    def noise(self, rel: Release, *, threads: int | None) -> ColumnNoise:
        """The noise of release ``rel`` (picklable, light: ship it to workers): lattice noise
        from the release's keyed streams (secure mode: streams keyed by OS entropy), or float
        noise (``float_noise``); value p of a column's stream is the noise at position p."""
        o = self.options
        lat = self.noise_lattice
        wplan = self.plan.for_workers(lattice=lat is not None, granularity=o.granularity)
        scale, unnoised = _noise_scale(self.plan), o.allow_unnoised
        if wplan.kind is None:
            return ColumnNoise(wplan, threads=threads, post=self.post, scale=scale, allow_unnoised=unnoised)
        streams = secure_streams(self.columns) if o.secure else rel.streams(self.columns)
        return ColumnNoise(wplan, streams=streams, lattice=lat, secure=o.secure, threads=threads, post=self.post,
                           scale=scale, allow_unnoised=unnoised)


def _refuse_float_noise(plan: NoisePlan) -> None:
    """``float_noise`` only where the release has no lattice law: floating-point transforms of
    uniform bits leave input-dependent gaps in the reachable outputs (Mironov 2012), so Laplace
    and Gaussian noise -- which have exact lattice laws (:mod:`puffer.lattice`) -- are refused
    with it, unless the mechanism is not certified on a lattice (its lattice plan is refused)."""
    from ..errors import PufferError

    if plan.kind is None:
        return
    try:
        plan.lattice_plan(None)
    except PufferError:
        return  # no lattice law for this noise or mechanism: float noise is the only way
    raise ParameterError("float_noise", True, f"False for {plan.label}: {plan.kind} noise has an exact lattice law "
                         "(published values on a power-of-two lattice, puffer.lattice), and floating-point noise is "
                         "not safe in floating point (Mironov 2012); float_noise / --float-noise is only for noise "
                         "families or mechanisms without a lattice law")


def _check_own_files(led_path: str, o: PublishOptions, avoid: tuple[str, ...]) -> None:
    """Refuse an input or output (``avoid``: input, output) that is one of the ledger's own files
    (checkpoint, unit secret, unit sets) or a key file: an output published over one destroys it
    (a release over the checkpoint left the ledger refusing every later release)."""
    from .index import index_path

    own = [checkpoint_path(led_path), secret_file(led_path), units_folder(led_path), index_path(led_path)]
    for k in (o.key, o.signing_key):
        p = getattr(k, "path", k)  # a key object's file, or the path given
        if isinstance(p, (str, os.PathLike)):
            own += [os.fspath(p), os.fspath(p) + ".pub"]
    real = set()
    for p in own:
        try:  # (a key given as text, not a path, may hold a NUL byte: it is refused later, unshown)
            real.add(os.path.realpath(p))
        except (ValueError, OSError):
            continue
    for k, p in enumerate(avoid):
        if os.path.realpath(p) in real:
            raise ParameterError("output" if k == len(avoid) - 1 and k else "input", p, "a path other than the "
                                 "ledger's own files (its checkpoint, unit secret, unit sets and index) and the key "
                                 "files: "
                                 "an output published over one destroys it")


def prepare(mechanism: Any, columns: Any, options: PublishOptions, *, default_ledger: str,
            avoid: tuple[str, ...] = (), config: dict[str, Any] | None = None,
            check_input: Callable[[], None] | None = None) -> Prepared:
    """Validate a release before any work (see the module docstring). ``default_ledger``: the
    engine's default ledger path; ``avoid``: paths the ledger must not be (input, output);
    ``config``: the engine's own options that change the output (recorded, checked on re-run);
    ``check_input``: the engine's checks of its input's columns (no rows read), run once the paths
    and the ledger are checked and before the key and the mechanism, which may fit a model and
    calibrate."""
    o = options
    refuse_seed(o.seed)
    cols = as_columns(columns)
    led_path = ledger_path(o.ledger, default_ledger)
    if os.path.realpath(led_path) in {os.path.realpath(p) for p in avoid}:
        raise ParameterError("ledger", led_path, "a file other than the input and the output")
    _check_own_files(led_path, o, avoid)
    led = Ledger(led_path, signing_key=o.signing_key)
    led.check_writable()  # a read-only or missing ledger folder: refused before any work
    led.check_signer()    # a broken chain or forged signature, a missing or other signing key: refused now
    if check_input is not None:
        check_input()
    key: Key | None = None
    # the key (a file read, no computation) before the mechanism, which may fit a model and calibrate
    if o.secure:
        if o.key is not None or o.insecure_seed is not None:
            raise ParameterError("key", "given", "no key in secure mode (its lattice noise comes from OS entropy "
                                 "only and is never reproducible)")
        if o.rerun is not None:
            raise ParameterError("rerun", o.rerun, "None in secure mode (nothing is reproducible there)")
    else:
        key = as_key(o.key, insecure_seed=o.insecure_seed)  # a bad key file: refused before any work
    series = None
    if o.series is not None:
        from .series import SeriesFile

        sf = SeriesFile(o.series)
        assert o.window is not None   # (PublishOptions: given together with series)
        k = int(o.window)
        sf.window(k)
        sf.check_framework(mechanism)
        if o.select is not None:
            raise ParameterError("select", o.select, "None with a series (the plan fixes the mechanism)")
        if o.float_noise:
            raise ParameterError("float_noise", True, "False with a series (its windows are published on the "
                                 "lattice, as every release)")
        sf.check_signer(_ledger_signer(led))
        # the plan's bound re-derived from its framework, the first time it is used with this
        # ledger (signed or not; a progress line past a second), before any work
        from .release import LedgerView
        from .series import verify_for_ledger

        verify_for_ledger(LedgerView(led).entries(), sf)
        plan = resolve(sf.mechanism(k))
        plan = NoisePlan(plan.kind, plan.params, plan.dim, plan.mechanism,
                         f"series {sf.plan_id} window {k}: {plan.label}", sf.path or "object", plan.noise)
        series = (sf, k)
    else:
        plan = resolve(mechanism, select=o.select, lattice=not o.float_noise)
    plan.check_columns(cols)
    if o.float_noise:
        _refuse_float_noise(plan)
    if plan.kind is None and not o.allow_unnoised:
        raise ParameterError("allow_unnoised", False, f"permission to publish unnoised values: the mechanism "
                             f"({plan.label}) has sensitivity 0, so it adds no noise and the output would be the "
                             "raw data (pass allow_unnoised=True / --allow-unnoised if that is intended)")
    if series is not None:
        spec = series[0].unit_spec(series[1], o.unit, o.order, o.per_unit, cols)
    else:
        spec = unit_spec(plan, o.unit, o.order, o.per_unit, cols)
    if not o.float_noise and plan.kind is not None:
        # refuse an impossible lattice, a noise without a lattice law, a mechanism not certified
        # on a lattice, before any work
        lat = plan.secure_plan(o.granularity) if o.secure else plan.lattice_plan(o.granularity)
        if o.granularity is not None and lat.sensitivity is None and lat.law.scale < RESOLUTION \
                and not o.allow_unnoised:
            # a plain noise (nothing calibrated, no padding) on a lattice coarser than its scale
            # rounds to 0 for most values, publishing the rounded input: the rule of
            # puffer.publish.values for float spacings, here for a lattice step given (the
            # default one is at most scale/RESOLUTION, or the finest there is: then the values'
            # own check names the column)
            raise ParameterError("allow_unnoised", False, f"permission to publish values the noise cannot change: "
                                 f"on the lattice of step granularity=2^{lat.g_exp} the noise of scale {lat.scale:.3g} "
                                 f"is {lat.law.scale:.3g} lattice units (below {RESOLUTION}), so many values would "
                                 f"come out as the rounded input. Use a granularity of at most scale/{RESOLUTION} "
                                 "(the default), or pass allow_unnoised=True / --allow-unnoised if that is intended")
    cfg = {"nulls": o.nulls, "select": o.select, "granularity": o.granularity, "allow_unnoised": o.allow_unnoised,
           "noise": "float" if o.float_noise else "lattice", **(config or {})}
    post: tuple[PostStep, ...] = ()
    if (o.clamp is not None and o.clamp is not False) or o.lattice:
        # post-processing to the query's range (recorded in the entry; a re-run must ask the same)
        from ..mechanisms.postprocess import RangePost

        fw = None if plan.mechanism is None else plan.mechanism.framework
        step = RangePost.resolve(fw, o.clamp, o.lattice)
        if step is not None:
            post = (step,)
        cfg["clamp"] = o.clamp if not isinstance(o.clamp, tuple) else list(o.clamp)
        cfg["lattice"] = o.lattice
    secret = secret_file(led.path)
    created = spec.column is not None and led.signing_key is None and not os.path.exists(secret)
    hasher = None if spec.column is None else unit_hasher(led.path, led.signing_key)
    if series is not None:
        cfg["series"] = {"plan_id": series[0].plan_id, "digest": series[0].digest, "window": series[1]}
        fdesc = series[0].framework_description()
    else:
        fdesc = framework_description(mechanism, plan)
    return Prepared(o, cols, plan, spec, led, key, cfg, fdesc, hasher, post, series,
                    secret if created else None)


def _ledger_signer(led: Ledger) -> dict[str, Any] | None:
    """The signer of the ledger's first entry (None: an unsigned or empty ledger)."""
    # (the chain and signatures were verified by led.check_signer() just before: the first line only)
    data = led._data()
    first = led._parse([data.split(b"\n", 1)[0]]) if b"\n" in data else []
    s = first[0].get("signer") if first else None
    if isinstance(s, dict):
        return s
    # a new ledger signed by this release's key
    return None if first or led.signing_key is None else led.signing_key.public.describe()


def _secret_id(path: str) -> str | None:
    """The id a unit secret file holds (None if it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as f:
            return str(json.load(f).get("id"))
    except (OSError, ValueError, AttributeError):
        return None
