"""Issue 22 section 4: answers a new user found silent or misleading. Each test failed before
its fix (the issue's reproduction)."""
from __future__ import annotations

import pytest

import puffer
from puffer.errors import ParameterError


def test_markov_w_inf_refuses_a_norm_like_the_base_class():
    fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=5)
    assert fw.w_inf().value == 5.0
    for norm in (1, 2, 3, float("inf")):
        with pytest.raises(ParameterError, match="norm"):
            fw.w_inf(norm=norm)
    # the base class gives the same answer
    with pytest.raises(ParameterError, match="1-D query"):
        puffer.models.correlated_pair().w_inf(norm=3)
