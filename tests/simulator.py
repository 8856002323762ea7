"""Scripts run in numba's CUDA simulator, in processes of their own (the
simulator is chosen when numba is imported), side by side: it is slow and
single-threaded, and the test process only waits for it."""

import json
import os
import subprocess
import sys


def run_simulated(commands, timeout=600):
    """Run each ``commands`` entry (a script's path and arguments) under
    ``NUMBA_ENABLE_CUDASIM=1``, all at once; return the JSON object each
    printed last, in order."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONWARNINGS": "ignore"}
    processes = [subprocess.Popen([sys.executable, *command], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for command in commands]
    results = []
    try:
        for process in processes:
            out, err = process.communicate(timeout=timeout)
            assert process.returncode == 0, err[-3000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for process in processes:
            process.kill()  # no-op for those that ended
    return results
