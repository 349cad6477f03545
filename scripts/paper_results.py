"""Every result of the five papers puffer implements (the items their specs name), and where each
one lives. Read by scripts/theorems.py: ``--check`` fails when a result marked computational has no
``Ref`` in the code, when a paper command does not mention the result, or when a named test is gone.

Values:
* ``CODE`` -- implemented in the package: some class or function must cite it (``Ref`` /
  ``REFERENCES``); the map lists the code and the tests that name it.
* ``"command:PATH"`` -- reproduced by a paper command (examples/papers/, run by tests/test_papers.py);
  the script must mention the result.
* ``"test:PATH::NAME"`` -- a worked example checked by that test.
* ``"gap: ..."`` -- computational but not implemented (listed in the map as such).
* any other string -- not computational, with the reason.
"""
from __future__ import annotations

CODE = None
_PROOF = "proof lemma (a step of a proof; no computation of its own)"
_DEF = "definition (the notion; no computation of its own)"
_CMP = "comparison between mechanisms (an inequality, no computation of its own)"

RESULTS: dict[str, dict[str, str | None]] = {
    "pierquin2024": {
        "Def 2.1": CODE, "Def 2.2": CODE, "Def 4.1": CODE, "Def 4.2": CODE, "Def 4.6": CODE, "Def 5.1": CODE,
        "Def A.1": _DEF + " (Rényi divergence; computed by puffer.noise's shift divergences)",
        "Def A.2": _DEF + " (Rényi DP, for comparison)",
        "Def C.1": _DEF + " (distribution privacy, for comparison)",
        "Def F.1": _DEF + " (dataset attribute privacy, for comparison)",
        "Prop 2.1": "post-processing property (no computation)",
        "Prop 2.2": CODE, "Thm 3.3": CODE, "Cor 3.1": CODE,
        "Lemma 3.1": _PROOF + " (shift reduction of Feldman et al. 2018)",
        "Prop 3.1": _CMP, "Prop B.1": "group-privacy comparison (an inequality)", "Lemma B.1": CODE,
        "Thm 4.3": CODE, "Lemma 4.1": _PROOF, "Lemma 4.2": _PROOF, "Prop 4.1": CODE, "Prop 4.2": _CMP,
        "Prop 4.3": _CMP, "Thm 4.5": CODE, "Cor 4.1": CODE, "Remark 4.4": "remark comparing with Chen & Ohrimenko 2023",
        "Lemma 5.1": _PROOF + " of Thm 5.2", "Thm 5.2": CODE,
        "Prop 6.1": CODE, "Prop 6.2": CODE, "Prop 6.3": CODE, "Prop 6.4": CODE, "Remark 6.1": CODE,
        "Example 1": CODE, "Example 2": CODE, "Example 3": CODE,
        "Thm A.3": CODE, "Thm A.4": CODE, "Thm A.5": CODE, "Cor A.1": CODE,
        "Prop C.1": CODE, "Prop C.2": CODE, "Thm C.2": "result of Chen & Ohrimenko 2023 quoted for comparison",
        "Prop C.3": "equivalence with distribution privacy (no computation)", "Remark C.4": "remark on Prop C.3",
        "Lemma C.1": _PROOF + " (characterisation of (z, delta)-nearness)", "Prop C.4": _CMP,
        "Lemma D.1": CODE, "Lemma D.2": _PROOF + " of Thm 4.5", "Prop D.1": _CMP, "Prop E.1": CODE,
        "Prop F.1": CODE, "Lemma F.1": CODE, "Prop F.2": CODE,
        "Table 1": "command:examples/papers/pierquin2024.py", "Figure 1": "diagram of the implications between notions",
        "Figure 5": CODE, "Figure 6": CODE,
    },
    "ding2022": {
        "Lemma 1": CODE, "Thm 1": CODE, "Thm 2": CODE, "Thm 3": CODE, "eq. (9)": CODE,
        "Lemma 2": "command:examples/papers/ding2022.py",
        "Remark 1": "remark: Lemma 1, Thm 1 and Thm 3(a) are Dwork-Roth's theorems with the plan sensitivity",
        "Example 1": "command:examples/papers/ding2022.py", "Example 2": "command:examples/papers/ding2022.py",
        "Table 1": "command:examples/papers/ding2022.py", "Table 4": "command:examples/papers/ding2022.py",
        "Table 2": CODE, "Table 3": CODE, "Table 5": CODE, "Table 6": CODE,
        **{f"Figure {i}": "command:examples/papers/ding2022.py" for i in range(1, 6)},
    },
    "guerrabalboa2024": {
        **{k: CODE for k in ("Thm III.3", "Thm IV.1", "Thm IV.3", "Thm IV.6", "Thm IV.11", "Thm IV.12", "Cor IV.13",
                             "Thm VI.3", "Thm VI.4", "Thm VI.5", "Thm VI.6", "Thm VI.7", "Thm VI.12", "Thm VI.13",
                             "Thm VI.14", "Thm VI.15", "Thm VI.16", "Thm VI.20", "Thm VI.21", "Thm VI.22",
                             "Thm VI.23", "Thm VI.26", "Thm VII.2", "Prop A.3", "Thm A.13", "Thm A.15", "Thm A.17",
                             "Cor A.18", "Lemma A.8")},
        **{f"Example {k}": "command:examples/papers/guerra_balboa2024.py"
           for k in ("II.9", "IV.5", "IV.9", "IV.14", "VI.8", "VI.25")},
        "Example III.4": "test:tests/accounting/test_acc_reference.py::test_R3_disconnected_fixed_size",
        "Example IV.2": "test:tests/accounting/test_acc_reference.py::test_R4_district_counts_metric",
        "Example IV.4": "test:tests/accounting/test_acc_reference.py::test_R6_bounded_laplace_counts_common",
        "Example IV.7": "test:tests/accounting/test_acc_reference.py::test_ordered_partition_best_bound",
        "Eq. VI.2": "test:tests/accounting/test_acc_reference.py::test_R9_gdp_partition_metric",
        "Thm II.8": "test:tests/accounting/test_acc_reference.py::test_R2_bounded_local_partition_is_no_guarantee",
        "Thm V.2": CODE, "Thm V.5": CODE, "Thm VI.24": CODE,
        "Thm VII.1": "post-processing property (no computation)",
        "Remark A.2": "remark (a metric restricted to a subclass)", "Remark III.7": "remark (the converse fails)",
        "Figure 1": "diagram of the granularity notions",
    },
    "seeman2024": {
        **{k: CODE for k in ("Algorithm 1", "Algorithm 2", "Lemma 4", "Lemma 5", "Lemma 6", "Lemma 7", "Lemma 8",
                             "Thm 9", "Thm 10", "Thm 15", "Thm 16", "Thm 17", "Eq. 3", "Eq. 10", "Eq. 18", "Eq. 35",
                             "Example 1", "Example 2", "Lemma 12", "Figure 1", "Figure 2", "Figure 3", "Figure 4")},
        "Example 3": "the appendix version of Example 1 (same code)",
        "Example 4": "the appendix version of Example 2 (same code)",
        **{f"Eq. {k}": "definition (DP, posterior or epsilon-TP inequalities)" for k in (1, 2, 5, 6, 11, 12)},
        **{f"Eq. {k}": "derivation inside Example 1 (computed by delta_gaussian_conditional)" for k in (15, 31, 32, 33, 34)},
        "Eq. 16": "derivation inside Example 2 (computed by delta_sdl_counts)",
        "Cor 13": "asymptotic rates (not computed)", "Thm 11": "asymptotic limit law (not computed)",
        "Thm 4": "regularity result of Soto & Reimherr 2021 (cited)",
        "Thm 6.1": "result of Kifer & Machanavajjhala 2014 (epsilon-DP implies Pufferfish), cited",
        "Lemma 14": "Blackwell's theorem (a proof tool)",
    },
    "chaudhuri2019": {
        **{k: CODE for k in ("Def 2", "Def 3", "Lemma 1", "Lemma 3", "Thm 1", "Thm 2", "Thm 3", "Thm 4", "Thm 5",
                             "Thm 6", "Thm 7", "Thm 8", "Thm 9", "Thm 10", "Thm 11", "Thm 12", "Thm 13", "Cor 1",
                             "Cor 2", "Table 1", "Figure 1", "Figure 2")},
        "Def 1": _DEF + " (Rényi divergence, RDP, KL-DP; computed by capacity.divergences)",
        "Def 4": _DEF + " (integral probability metric, used by Thm 7)",
        "Lemma 2": "statement about a non-private release (no computation)",
        "Lemma 4": _PROOF + " (sign reduction, used by the restricted solvers)",
        "Lemma 5": _PROOF + " (closed-form scale optimisation inside the restricted divergence)",
        "Lemma 6": _PROOF + " (closure under negation)",
    },
}
