"""What every calibrated mechanism shares (one interface, so callers never probe attributes):

* ``noise`` — the calibrated noise family (None when no noise is needed);
* ``sensitivity`` — a :class:`~puffer.Sensitivity` with its witness;
* ``guarantee`` — a guarantee object whose provenance cites the theorem (``refs``);
* ``target`` — the eps / delta / alpha the mechanism was calibrated to (None where not given);
* ``group`` — the group-DP comparison (or None);
* ``release(values, *, rng=None, out=None)`` and ``to_dict()``.

Keyword conventions: ``eps=``, ``delta=``, ``alpha=`` name the privacy target everywhere; a
noise to calibrate may be given as an instance, a family class or a name (``Gaussian``,
``"gaussian"``).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..framework import Framework, Sensitivity
from ..guarantees import PP, RPP, ApproxRPP, Provenance, RPPCurve, round_up
from ..refs import Ref

if TYPE_CHECKING:
    from numpy.typing import NDArray

#: the guarantee of a calibrated Pufferfish mechanism (each subclass narrows it)
PufferfishGuarantee = PP | RPP | RPPCurve | ApproxRPP


@dataclass(frozen=True)
class GroupComparison:
    """The noise group DP would need for the same target.

    ``sensitivity``: Delta_GROUP (the query's range over the whole correlated group);
    ``scale``: the scale the *same noise family* needs, calibrated by the *same theorem-free
    rule* (Laplace: Delta/eps; other families: the same RPP / PP target) at Delta_GROUP;
    ``gain`` = that scale / this mechanism's scale (> 1 means puffer adds less noise). This is
    the one definition used for every mechanism: a relaxed condition (e.g. Ding's Theorem 2)
    shows its whole benefit in the gain, not only the ratio of sensitivities. ``note`` says
    what the group is."""

    sensitivity: float
    scale: float
    gain: float
    note: str = ""


def noise_description(noise: Any) -> Any:
    """JSON-able description of a noise (its ``describe()``), None for no noise."""
    if noise is None:
        return None
    describe = getattr(type(noise), "describe", None)
    return describe(noise) if describe is not None else repr(noise)


class Mechanism:
    """Base of the calibrated mechanisms. Subclasses set ``noise``, ``sensitivity``,
    ``guarantee`` and ``group`` in their constructor."""

    #: the theorem the calibration rests on, as cited in the guarantee's provenance
    theorem = ""
    #: the results the mechanism implements, cited in every guarantee's provenance
    refs: tuple[Ref, ...] = ()
    #: the calibrated noise, a :mod:`puffer.noise` family with its scale (or the exponential-mechanism
    #: noise of :class:`~puffer.mechanisms.Kantorovich`); None when no noise is needed (sensitivity 0)
    noise: Any
    #: the sensitivity the noise is calibrated to, with its witness (the prior and secret pair that bind)
    sensitivity: Sensitivity
    #: the guarantee, whose eps and delta are certified upper bounds and whose provenance cites the theorem
    guarantee: PufferfishGuarantee
    #: the noise group DP would need for the same target (:class:`GroupComparison`), or None
    #: where the framework defines no group
    group: GroupComparison | None
    #: the framework the mechanism was calibrated on (None when calibrated from a given sensitivity)
    framework: Framework | None

    @staticmethod
    def _check_framework(fw: Any) -> Framework:
        if not isinstance(fw, Framework):
            raise ParameterTypeError("framework", fw, "a puffer.Framework")
        return fw

    def _provenance(self, notes: str = "") -> Provenance:
        s = self.sensitivity
        return Provenance(
            mechanism=type(self).__name__, theorem=self.theorem, sensitivity=s.value,
            witness=s.to_dict()["witness"], noise=noise_description(self.noise),
            framework=None if self.framework is None else self.framework.digest(), notes=notes,
            refs=self.refs)

    @property
    def target(self) -> dict[str, Any]:
        """The privacy target the mechanism was calibrated to: eps, delta, alpha (None if not given)."""
        t = getattr(self, "_target", None)
        if t is not None:
            return dict(t)
        return {k: getattr(self, k, None) for k in ("eps", "delta", "alpha")}

    @target.setter
    def target(self, value: dict[str, Any]) -> None:
        self._target = dict(value)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able record of the mechanism: what it is, its target, noise, sensitivity with
        witness, guarantee (with provenance) and the framework digest."""
        from ..guarantees import encode_number
        return {
            "mechanism": type(self).__name__,
            "refs": [r.to_dict() for r in self.refs],
            "target": {k: (None if v is None else encode_number(float(v))) for k, v in self.target.items()},
            "noise": noise_description(self.noise),
            "sensitivity": self.sensitivity.to_dict(),
            "guarantee": self.guarantee.to_dict(),
            "framework": None if self.framework is None else self.framework.digest(),
        }

    def _group(self, scale: float, scale_for: Any) -> GroupComparison | None:
        g = None if self.framework is None else self.framework.group_sensitivity
        if g is None or self.framework is None:
            return None
        gs = float(scale_for(g))
        return GroupComparison(g, gs, (gs / scale) if scale > 0 else math.inf, self.framework.group_note)

    def lattice_sensitivity(self) -> float:
        """The quantity Delta that a lattice release pads (:mod:`puffer.lattice.plan`): snapping
        the query values to g Z moves this quantity by at most c g, and the theorem's guarantee
        depends on the noise only through (this quantity) / scale, so the noise scale inflated
        by (Delta + c g) / Delta keeps the guarantee on the lattice (rounded Laplace: by
        post-processing, at every order; discrete Gaussian: CKS20 Prop 5, for Rényi curves).
        A mechanism whose theorem is not of that form refuses lattice releases, naming why."""
        raise ParameterError("secure", True, f"a mechanism certified on a lattice: {type(self).__name__}'s theorem "
                             "is not a function of a transport radius over the noise scale, so snapping to a "
                             "lattice is not covered by padding the noise")

    def lattice_plan(self, granularity: float | None = None, *, bound: float | None = None) -> Any:
        """The :class:`~puffer.lattice.LatticePlan` of one release of this mechanism's answer (a
        scalar, or one d-vector padded in the sensitivity's norm) on a lattice: what
        ``release(secure=True)`` and the publishing engines draw. The guarantee holds for it at
        every order (see :meth:`lattice_sensitivity`).

        Parameters
        ----------
        granularity : float, optional
            The lattice spacing g, a power of two (default: the largest one whose padding
            inflates the noise by at most 0.1 %, coarsened so that values within ``bound`` fit;
            see :mod:`puffer.lattice.plan`).
        bound : float, optional
            The declared bound on the values' magnitude (public, like the sensitivity): the
            lattice is chosen so that every value within it is exactly on the lattice.
        """
        from ..lattice import lattice_plan

        if self.noise is None:
            raise ParameterError("secure", True, f"a mechanism that adds noise ({type(self).__name__} has "
                                 "sensitivity 0)")
        base = getattr(self.noise, "base", self.noise)
        from ..sampling import noise_spec

        if noise_spec(base)[0] == "gaussian" and not isinstance(self.guarantee, (RPP, RPPCurve, ApproxRPP)):
            # the rounded Laplace keeps every divergence (post-processing); the discrete Gaussian
            # only the Renyi curve (CKS20 Prop 5), not an (eps, delta) from the Gaussian's profile
            raise ParameterError("secure", True, f"a guarantee the discrete Gaussian is certified for on a lattice: "
                                 f"its Renyi curve (Canonne et al. 2020, Prop 5), while {type(self).__name__} claims "
                                 f"a {type(self.guarantee).__name__} from the continuous Gaussian's privacy profile; "
                                 "calibrate to an RPP target (alpha=) or use Laplace noise")
        dim = int(self.framework.dim) if self.framework is not None else int(getattr(self.noise, "dim", 1))
        # a d-vector moves by up to d g/2 in L1 when snapped: pad in the sensitivity's norm (L1,
        # the largest padding, for any norm other than 2); a scalar: per coordinate
        norm = ("l2" if self.sensitivity.norm == 2 else "l1") if dim > 1 else "coordinate"
        return lattice_plan(base, dim, sensitivity=self.lattice_sensitivity(), granularity=granularity, norm=norm,
                            bound=bound)

    # the result's type follows the values (see puffer.sampling.add_noise): an array gives a float
    # array (float32 stays float32 unless secure=True or no noise is added, other dtypes become
    # float64), a sequence of numbers a float64 array, a Python / numpy scalar a numpy float64 or
    # a 0-d array, a pandas Series or DataFrame (untyped: Any) the same pandas type
    @overload
    def release(self, values: NDArray[Any], *, rng: Any = None, out: Any = None, secure: bool = False,
                granularity: float | None = None, bound: float | None = None, threads: int | None = None,
                allow_unnoised: bool = False, clamp: Any = None, lattice: bool = False) -> NDArray[np.floating[Any]]: ...
    @overload
    def release(self, values: Sequence[float], *, rng: Any = None, out: Any = None,
                secure: bool = False, granularity: float | None = None, bound: float | None = None,
                threads: int | None = None, allow_unnoised: bool = False, clamp: Any = None,
                lattice: bool = False) -> NDArray[np.float64]: ...
    @overload
    def release(self, values: float, *, rng: Any = None, out: Any = None, secure: bool = False,
                granularity: float | None = None, bound: float | None = None, threads: int | None = None,
                allow_unnoised: bool = False, clamp: Any = None,
                lattice: bool = False) -> np.float64 | NDArray[np.float64]: ...
    @overload
    def release(self, values: Any, *, rng: Any = None, out: Any = None, secure: bool = False,
                granularity: float | None = None, bound: float | None = None, threads: int | None = None,
                allow_unnoised: bool = False, clamp: Any = None, lattice: bool = False) -> Any: ...
    def release(self, values: Any, *, rng: Any = None, out: Any = None, secure: bool = False,
                granularity: float | None = None, bound: float | None = None, threads: int | None = None,
                allow_unnoised: bool = False, clamp: Any = None, lattice: bool = False) -> Any:
        """``values`` plus the calibrated noise.

        Parameters
        ----------
        values : array_like, float, pandas Series or DataFrame
            The true answers of the framework's query (finite numbers). An array gives a float
            array (float32 stays float32 unless ``secure=True``; other dtypes become float64), a
            sequence a float64 array, a scalar a numpy float64, a pandas object the same pandas
            type with its index.
        rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
            numpy's convention: the same seed gives the same draw. That is for experiments and
            tests, **not for publication**: anyone who guesses a small seed regenerates the noise
            and recovers the values. To publish, use ``secure=True`` here or
            :func:`puffer.io.noise_file` with a key (``puffer keygen``).
        out : numpy.ndarray, optional
            Where to write the result: ``values`` itself (in place) or a C-contiguous writable
            array of its shape and dtype.
        secure : bool
            The exact lattice mode of :mod:`puffer.secure` with this mechanism's own noise
            (Laplace or Gaussian), drawn from OS entropy (``rng`` must be None), padded for
            :meth:`lattice_sensitivity` (:meth:`lattice_plan`): each value of a scalar query is
            its own release (padding per coordinate); a d-dimensional query releases one
            d-vector, padded in the sensitivity's norm. The guarantee holds on the lattice at
            every order; a mechanism it is not certified for refuses.
        granularity : float, optional
            The lattice spacing (a power of two) of secure mode, as in
            :func:`puffer.secure.secure_add_noise`; only with ``secure=True``.
        bound : float, optional
            The declared bound on the values' magnitude in secure mode (public, like the
            sensitivity); values above it are an error, never clipped. Only with ``secure=True``.
        threads : int, optional
            Worker threads of the sampler (default: all cores). The output does not depend on it.
        allow_unnoised : bool
            A mechanism whose sensitivity is 0 adds no noise: it refuses to release unless
            ``allow_unnoised=True`` says that publishing the values as they are is intended.
        clamp : bool or (float, float), optional
            Post-processing (no privacy cost, but biased toward the inside of the range:
            :mod:`puffer.mechanisms.postprocess`): ``True`` clamps to the query's range over the
            framework's conditional laws (a Markov sum: [T min v, T max v]), ``(lo, hi)`` to a
            range you give; after ``lattice``.
        lattice : bool
            Post-processing: round to the query's lattice (an integer-valued query: its support's
            gcd step).

        Examples
        --------
        >>> import numpy as np, puffer
        >>> m = puffer.mechanisms.Wasserstein(puffer.models.correlated_pair(), eps=1.0)
        >>> y = m.release(np.array([1.0, 2.0]), secure=True, granularity=2**-10)
        >>> bool(np.all(y * 2**10 == np.round(y * 2**10)))
        True
        """
        from .postprocess import RangePost

        post = RangePost.resolve(self.framework, clamp, lattice)
        res = self._release(values, rng=rng, out=out, secure=secure, granularity=granularity, bound=bound,
                            threads=threads, allow_unnoised=allow_unnoised)
        return res if post is None else post(res)

    def _release(self, values: Any, *, rng: Any, out: Any, secure: bool, granularity: float | None,
                 bound: float | None, threads: int | None, allow_unnoised: bool) -> Any:
        from .. import _validate as V
        from .. import sampling

        for name, flag in (("secure", secure), ("allow_unnoised", allow_unnoised)):
            if not isinstance(flag, bool):
                raise ParameterTypeError(name, flag, "True or False")
        if self.noise is None:
            if not allow_unnoised:
                raise ParameterError("allow_unnoised", False, f"permission to publish unnoised values: "
                                     f"{type(self).__name__} has sensitivity {self.sensitivity.value:g}, so it adds "
                                     "no noise and the release is the raw data (pass allow_unnoised=True if intended)")
            # no noise needed (zero sensitivity): the values are released as they are, so they
            # must be finite real numbers like everywhere else
            src, wrap = V.release_values("values", values)   # bool / inexact ints refused, pandas kept
            vals = V.float_array("values", src, allow_empty=True)
            if out is None:
                return wrap(vals.copy())
            out[...] = vals
            return out
        if not secure:
            for name, v in (("granularity", granularity), ("bound", bound)):
                if v is not None:
                    raise ParameterError(name, v, "None unless secure=True")
            return sampling.add_noise(values, self.noise, rng=rng, out=out, threads=threads)
        if rng is not None:
            raise ParameterError("rng", rng, "None with secure=True (its noise comes from OS entropy only)")
        from ..secure import secure_release

        dim = 1 if self.framework is None else int(self.framework.dim)
        src, wrap = V.release_values("values", values)   # bool / inexact ints refused, pandas kept
        if dim > 1 and int(np.size(src)) != dim:
            raise ParameterError("values", f"{int(np.size(src))} values", f"one {dim}-vector (the query's dimension) "
                                 "with secure=True")
        plan = self.lattice_plan(granularity, bound=bound)
        res = secure_release(np.asarray(src, dtype=np.float64), plan, bound=bound, out=out, threads=threads)
        return res if out is not None else wrap(res)

    def close_adversary(self, alpha: float | None = None, *, w_inf: float | None = None,
                        d_inf: float | None = None, hp: float = 3.0, hq: float = 3.0, hr: float = 3.0) -> PP | RPP:
        """The guarantee against an adversary with a prior theta' outside Theta (Pierquin et al.
        2024, App. A.4). See :mod:`puffer.mechanisms.close_adversary`.

        Parameters
        ----------
        alpha : float, optional
            The Rényi order of the guarantee (Thm A.5; with ``w_inf``).
        w_inf : float, optional
            W_inf between the query laws under theta' and under the nearest theta in Theta
            (Thm A.5, for an additive mechanism with an RPP curve).
        d_inf : float, optional
            The D_inf distance between theta' and Theta (Thm A.3, for a PP guarantee; alone).
        hp, hq, hr : float
            The Hoelder exponents of Thm A.5, with 1/hp + 1/hq + 1/hr = 1.
        """
        from ..guarantees import PP as _PP
        from . import close_adversary as ca

        prov = getattr(self.guarantee, "provenance", None)
        if d_inf is not None:
            if w_inf is not None or alpha is not None:
                raise ParameterError("d_inf", d_inf, "d_inf alone (Thm A.3) or w_inf with alpha (Thm A.5)")
            if not isinstance(self.guarantee, _PP):
                raise ParameterError("d_inf", d_inf, f"a PP guarantee for Thm A.3 ({type(self).__name__} "
                                                     "gives an RPP guarantee: use w_inf and alpha)")
            return ca.close_adversary_pp(self.guarantee.eps, d_inf, prov)
        if w_inf is None or alpha is None:
            raise ParameterError("w_inf", w_inf, "w_inf and alpha (Thm A.5), or d_inf (Thm A.3)")
        noise = self.noise
        if noise is None:
            raise ParameterError("w_inf", w_inf, "a mechanism that adds noise")
        eps_at = getattr(self, "epsilon", None)
        if eps_at is None:
            raise ParameterError("alpha", alpha, f"a mechanism with an RPP curve ({type(self).__name__} has none)")
        return ca.close_adversary_additive(alpha, eps_at, lambda o, z: float(noise.R(o, z)), w_inf,
                                           hp=hp, hq=hq, hr=hr, provenance=prov)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(sensitivity={self.sensitivity.value!r}, noise={self.noise!r}, "
                f"guarantee={self.guarantee!r})")



def scale_up(x: float) -> float:
    """A noise scale rounded upward (more noise is the safe side)."""
    if not math.isfinite(x) or x < 0:
        raise ParameterError("scale", x, "a finite noise scale >= 0")
    return round_up(x)
