#!/usr/bin/env bash
# One GPU session's checks, as run on a lent device machine (an image with
# CUDA, cupy, numba-cuda and JAX but not logdens' own dependencies):
#   bash benchmarks/gpu_session.sh OUT_DIR [bench_cuda.py arguments...]
# 1. installs arviz-base / arviz-stats from wheels in .whl/ (carried: the
#    machine cannot reach an index) and logdens itself, editable;
# 2. makes numba-cuda 0.30.4 work with numpy 2.5 (it still names
#    np.row_stack; benchmarks/RESULTS.md, session 10);
# 3. runs the tests marked gpu (GPU_TESTS: which files), then
#    benchmarks/bench_cuda.py, each under a time limit (GPU_TEST_SECONDS,
#    GPU_BENCH_SECONDS), their logs and JSON in OUT_DIR.
set -u -o pipefail
out=${1:?usage: gpu_session.sh OUT_DIR [bench_cuda.py arguments...]}
shift
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/numpy_compat
printf 'import numpy\nif not hasattr(numpy, "row_stack"):\n    numpy.row_stack = numpy.vstack\n' \
    > /tmp/numpy_compat/sitecustomize.py
export PYTHONPATH=/tmp/numpy_compat:/tmp/site
if ! python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > "$out/install.log" 2>&1; then
    tail -5 "$out/install.log"  # no install: the two sub-packages' folders linked where Python looks for them
    ln -sfn ../distributions logdens/distributions && ln -sfn ../samplers logdens/samplers
    export PYTHONPATH=$PYTHONPATH:$PWD
fi
python3 -c "import logdens.samplers, logdens.distributions" || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
tests=${GPU_TESTS:-tests/test_cuda.py tests/test_chees_device.py tests/test_readme.py}
timeout "${GPU_TEST_SECONDS:-240}" python3 -m pytest -m gpu -q -p no:cacheprovider $tests 2>&1 \
    | tee "$out/pytest.log" | tail -15
timeout "${GPU_BENCH_SECONDS:-300}" python3 benchmarks/bench_cuda.py --json "$out/bench.json" "$@" 2>&1 \
    | tee "$out/bench.log" | grep -v "^ *warnings.warn\|Warning" | tail -60
