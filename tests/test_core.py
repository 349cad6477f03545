"""The compiled core: importable, thread pool correct for every thread count, C++ errors
translated into puffer exceptions (never an abort)."""
import subprocess
import sys

import pytest

import puffer
import puffer._core as core


@pytest.mark.parametrize("threads", [0, 1, 2, 8])
@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 100_000])
def test_parallel_for_covers_every_task_once(threads, n):
    expected = float(sum(i * i for i in range(n)))
    assert core.common.parallel_sum_of_squares(n, threads) == pytest.approx(expected, rel=1e-12)


def test_cpp_invalid_argument_becomes_parameter_error():
    with pytest.raises(puffer.ParameterError) as info:
        core.common.parallel_sum_of_squares(10, 5000)
    assert info.value.param == "threads" and "5000" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_import_in_fresh_interpreter():
    out = subprocess.run([sys.executable, "-c", "import puffer, puffer._core; print(puffer._core.hardware_threads())"],
                         capture_output=True, text=True, check=True)
    assert int(out.stdout) >= 1


def test_demo_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "puffer", "--help"], capture_output=True, text=True, check=True)
    assert "demo" in out.stdout and "run" in out.stdout
