"""Adversarial review of the series plan file (puffer.publish.series, issue 39 section 5): a plan
file whose scales were lowered and whose copies and digests were rewritten to match.

SeriesFile checks the digest against the content, a signature where there is one, the framework's
digest and that the plan's fields agree with one another; it does not re-derive the bound from
the embedded framework. An unsigned plan (or one signed with the editor's own key, used with an
unsigned ledger) that was edited consistently therefore loads and publishes with its claimed eps,
although the exact loss at its scales is far above it (checked here with the reviewer's
independent oracle). A sound loader re-checks ``series_epsilon(framework, windows, scale) <=
eps`` (certified, cheap next to planning) or refuses plans it cannot re-check.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from review_oracle import Series

pub = pytest.importorskip("puffer.publish.series")

T, LEN = 8, 4
TRANS = [[0.9, 0.1], [0.2, 0.8]]
CFG = {"model": {"kind": "markov_chain", "T": T, "trans": TRANS}, "target": {"eps": 1.0}}


def _retamper(env: dict, factor: float) -> dict:
    """The plan file with every scale divided by ``factor`` and every copy and digest made to match."""
    from puffer.publish.ledger import canonical
    from puffer.series import SeriesPlan

    d = json.loads(json.dumps(env))
    p = json.loads(d["plan"])
    p["scales"] = [s / factor for s in p["scales"]]
    p["guarantee"]["provenance"]["noise"]["scales"] = p["scales"]
    sp = SeriesPlan.from_dict(p)                      # the plan object accepts it
    d["plan"] = sp.to_json()
    d["plan_digest"] = str(sp.digest())
    d["scales"] = [float(s) for s in sp.scales]
    d["guarantee"] = sp.guarantee.to_dict()
    for k in ("digest", "sig", "signer"):
        d.pop(k, None)
    d["digest"] = hashlib.sha256(canonical(d)).hexdigest()
    return d


def test_an_intact_plan_file_loads_and_is_sound():
    env = pub.make_plan(CFG, windows=LEN, eps=1.0)
    f = pub.SeriesFile(env)
    fw = f.framework
    s = Series([(fw.transitions[0], fw.initial_laws[0])], [0, 1], f.windows, T)
    assert s.loss(f.plan.scales)[0] <= f.plan.guarantee.eps


@pytest.mark.xfail(strict=False, reason="CURRENTLY FAILS: SeriesFile does not re-derive the bound from the embedded "
                   "framework, so an unsigned plan file edited consistently (scales / 4, copies and digests "
                   "rewritten) loads with eps = 1 while its exact loss is 3.63")
def test_a_consistently_edited_unsigned_plan_file_is_refused():
    env = pub.make_plan(CFG, windows=LEN, eps=1.0)
    bad = _retamper(env, 4.0)
    f = None
    try:
        f = pub.SeriesFile(bad)
    except Exception:
        return                                        # refused: sound
    fw = f.framework
    s = Series([(fw.transitions[0], fw.initial_laws[0])], [0, 1], f.windows, T)
    exact = s.loss(f.plan.scales)[0]
    assert exact <= f.plan.guarantee.eps, (f"accepted a plan claiming eps={f.plan.guarantee.eps} whose exact "
                                           f"loss is {exact:.4f}")


def test_the_edit_is_what_the_oracle_says():
    # the tampered scales really leak more than the claim (so the xfail above is a soundness gap)
    env = pub.make_plan(CFG, windows=LEN, eps=1.0)
    sc = np.array(json.loads(env["plan"])["scales"]) / 4
    fw_trans = np.array(TRANS)
    pi = np.array([2 / 3, 1 / 3])
    s = Series([(fw_trans, pi)], [0, 1], [(0, 4), (4, 8)], T)
    assert s.loss(sc)[0] > 3.0
