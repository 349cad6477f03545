"""Issue 30 item 5: a Dask script without an ``if __name__ == "__main__":`` guard wrote a release
to the ledger from a worker (Dask's local workers start, like multiprocessing's "spawn", by
re-running the main script). A worker that re-runs the script is refused before it publishes; the
main process and ordinary (forked) children are not. multiprocessing's own spawn and forkserver
start methods stand in for Dask's nannies (the same bootstrap: ``spawn.prepare`` runs the script as
``__mp_main__``)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import multiprocessing as mp, os, sys
    from puffer.publish.ledger import Ledger
    try:
        with Ledger(os.environ["LEDGER"]).locked():
            pass
        print("wrote", __name__, flush=True)
    except Exception as exc:
        print("refused", __name__, type(exc).__name__, str(exc), flush=True)

    def work():
        print("task ran", flush=True)

    if __name__ == "__main__":
        for method in ("spawn", "forkserver", "fork"):
            p = mp.get_context(method).Process(target=work)
            p.start()
            p.join()
            assert p.exitcode == 0, (method, p.exitcode)
""")


def test_a_worker_re_running_the_script_cannot_publish(tmp_path):
    script = tmp_path / "release_job.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, LEDGER=str(tmp_path / "l.jsonl"))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=900)   # a hang guard: seconds alone
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "wrote __main__"
    refused = [line for line in lines if line.startswith("refused")]
    # spawn and forkserver re-run the script (as __mp_main__) and are refused; fork does not re-run it
    assert len(refused) == 2 and all(line.startswith("refused __mp_main__ ParameterError parameter 'ledger'")
                                     for line in refused), lines
    assert all('if __name__ == "__main__":' in line for line in refused)
    assert lines.count("task ran") == 3 and not [line for line in lines if line.startswith("wrote __mp")]
