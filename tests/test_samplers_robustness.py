"""Faulty densities, bad arguments, Ctrl-C and oversized output (issue 12).

The Ctrl-C tests send real SIGINTs, so they run in a subprocess (a signal
that escaped would otherwise stop pytest itself), with a timeout.
"""

import os
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

from logdens import samplers
from logdens.samplers import kernel
from logdens.samplers.interrupt import Interrupt
from logdens.samplers.mass_matrix import warmup_schedule
from logdens.samplers.protocol import numba_entry
from logdens.samplers.runner import run_chains
from logdens.samplers.sample import _chain_state, _config
from test_samplers_targets import (EightSchools, NumbaTarget, PythonGaussian, faulty_normal,
                                   flat)

TESTS = Path(__file__).parent
#: Generous: the subprocess may compile the sampler's kernels from scratch.
SUBPROCESS_TIMEOUT = 300


def quiet_nuts(target, **kw):
    """``samplers.nuts`` without progress bar or diagnostic warnings."""
    args = dict(draws=300, tune=300, chains=1, seed=0, progress=False)
    args.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", samplers.SamplerWarning)
        return samplers.nuts(target, **args)


class Counting:
    """External standard normal that counts its gradient calls."""

    dim = 2

    def __init__(self):
        self.calls = 0

    def log_density_gradient(self, theta):
        self.calls += 1
        return -0.5 * float(theta @ theta), -theta


# ----- item 5: +inf and NaN are rejected points ----------------------------

class SometimesNonFinite(Counting):
    """External standard normal returning ``bad`` on 1% of calls."""

    def __init__(self, bad):
        super().__init__()
        self.bad, self.rng = bad, np.random.default_rng(0)

    def log_density_gradient(self, theta):
        if self.rng.uniform() < 0.01:
            return self.bad, np.zeros(2)
        return super().log_density_gradient(theta)


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_external_plus_inf_and_nan_do_not_stick_the_chain(bad):
    theta = quiet_nuts(SometimesNonFinite(bad)).posterior["theta"].values[0]
    assert len(np.unique(theta[:, 0])) > 250  # +inf kept 1 distinct draw of 300
    assert abs(theta.mean()) < 0.5 and 0.5 < theta.var() < 1.5


def test_compiled_plus_inf_and_nan_act_as_minus_inf():
    """+inf above 1 and NaN below -1: the draws stay in [-1, 1]."""
    theta = quiet_nuts(NumbaTarget(faulty_normal, 2), chains=2).posterior["theta"].values
    assert np.all(np.abs(theta[..., 0]) <= 1.0)
    assert len(np.unique(theta[..., 0])) > 500


def test_find_map_and_initial_point_reject_plus_inf():
    class PlusInfNearZero(Counting):
        def log_density_gradient(self, theta):
            if np.all(np.abs(theta) < 1.0):
                return np.inf, np.zeros(2)
            return -0.5 * float((theta - 3.0) @ (theta - 3.0)), 3.0 - theta

    fit = samplers.find_map(PlusInfNearZero(), init=[2.0, 2.0])
    np.testing.assert_allclose(fit.theta, [3.0, 3.0], atol=1e-6)
    with pytest.raises(ValueError, match=r"init=\[0.0, 0.0\] gives log density -inf"):
        samplers.nuts(PlusInfNearZero(), init=[0.0, 0.0], progress=False)


# ----- item 11: arguments and output errors before sampling ----------------

def test_draws_zero_is_refused_before_any_evaluation():
    target = Counting()
    with pytest.raises(ValueError, match="draws=0; must be an integer >= 1"):
        samplers.nuts(target, draws=0, progress=False)
    with pytest.raises(ValueError, match="draws=None"):
        samplers.nuts(target, draws=None, progress=False)
    assert target.calls == 0


@pytest.mark.parametrize("method", ["constrain", "pointwise_log_likelihood"])
def test_output_errors_show_before_sampling(method):
    class Broken(Counting):
        pass

    def fail(self, theta):
        raise ZeroDivisionError("bug in " + method)

    setattr(Broken, method, fail)
    target = Broken()
    with pytest.raises(ZeroDivisionError, match="bug in") as err:
        samplers.nuts(target, progress=False)
    assert target.calls < 10  # the initial point only: no sampling was done
    if sys.version_info >= (3, 11):
        assert "before sampling" in " ".join(err.value.__notes__)


def test_output_errors_after_sampling_keep_the_draws():
    class FailsInTheTails(Counting):
        """constrain and the log-likelihood fail at some draws only."""

        def constrain(self, theta):
            if abs(theta[0]) > 1.0:
                raise ValueError("constrain failed")
            return {"x": theta.copy()}

        def pointwise_log_likelihood(self, theta):
            if abs(theta[1]) > 1.0:
                raise ValueError("log-likelihood failed")
            return {"y": -0.5 * theta**2}

    with pytest.warns(samplers.SamplerWarning, match="lacks the constrained posterior") as rec:
        idata = samplers.nuts(FailsInTheTails(), draws=200, tune=200, chains=2,
                              progress=False, init=[0.0, 0.0])
    message = " ".join(str(w.message) for w in rec)
    assert "log-likelihood failed" in message and "constrain failed" in message
    assert idata.posterior["theta"].shape == (2, 200, 2)  # the unconstrained draws
    assert "log_likelihood" not in idata.children


# ----- item 17: a model with no parameters ---------------------------------

def test_no_parameters_is_refused_before_any_work():
    class Empty(Counting):
        dim = 0

    for run in (samplers.nuts, samplers.hmc, samplers.find_map, samplers.laplace):
        target = Empty()
        with pytest.raises(ValueError, match="dim=0: no parameters"):
            run(target)
        assert target.calls == 0


# ----- item 13: the log-likelihood's size ----------------------------------

def test_log_likelihood_above_the_limit_is_left_out_and_computable_later():
    kw = dict(draws=50, tune=50, chains=2, seed=3, progress=False)
    full = quiet_nuts(EightSchools(), **kw)
    # 2 chains x 50 draws x 8 observations x 8 bytes = 6400 bytes
    with pytest.warns(samplers.SamplerWarning, match="= 6.4 kB, above") as rec:
        small = samplers.nuts(EightSchools(), log_likelihood_max_bytes=6000, **kw)
    message = " ".join(str(w.message) for w in rec)
    assert "log_likelihood_max_bytes" in message and "pointwise_log_likelihood" in message
    assert "log_likelihood" not in small.children
    part = samplers.pointwise_log_likelihood(EightSchools(),
                                             small.posterior.isel(draw=slice(10, 20)))
    np.testing.assert_allclose(part["y"].values,
                               full.log_likelihood["y"].values[:, 10:20], rtol=1e-12)
    assert list(part["draw"].values) == list(range(10, 20))
    kept = quiet_nuts(EightSchools(), log_likelihood_max_bytes=6400, **kw)
    assert "log_likelihood" in kept.children


def test_laplace_log_likelihood_has_the_same_limit():
    class WithLikelihood(PythonGaussian):
        def pointwise_log_likelihood(self, theta):
            return {"y": -0.5 * (theta - self.mean) ** 2}

    target = WithLikelihood([1.0, 2.0], np.eye(2))
    # 1 chain x 100 draws x 2 observations x 8 bytes = 1600 bytes
    with pytest.warns(samplers.SamplerWarning, match="= 1.6 kB, above"):
        idata = samplers.laplace(target, draws=100, log_likelihood_max_bytes=1000)
    assert "log_likelihood" not in idata.children
    assert samplers.laplace(target, draws=100).log_likelihood["y"].shape == (1, 100, 2)


def test_pointwise_log_likelihood_of_a_compiled_model():
    import logdens as ld
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0.0, 5.0))
    sigma = m.param("sigma", ld.HalfNormal(2.0))
    m.deterministic("twice_mu", 2.0 * mu)
    m.observe("y", ld.Normal(mu, sigma), np.array([0.5, 1.5, -0.2]))
    density = m.compile()
    idata = quiet_nuts(density, draws=30, tune=30, chains=2)
    part = samplers.pointwise_log_likelihood(density, idata.posterior.isel(draw=slice(0, 5)))
    np.testing.assert_allclose(part["y"].values, idata.log_likelihood["y"].values[:, :5],
                               rtol=1e-10)


# ----- item 12: the interrupt flag inside a trajectory ---------------------

def test_interrupt_flag_ends_an_endless_trajectory():
    """A flat density never turns: with max_treedepth=40 one transition
    would take 2**40 steps.  The flag ends it, and the cut transition is
    dropped."""
    target = NumbaTarget(flat, 2)
    entry = numba_entry(target)
    state = _chain_state(entry, 2, False, 0, 0, None)
    iconf, fconf = _config(kernel.NUTS, 40, 0, 10, "diag", 0.8)
    interrupt = Interrupt()
    kernel.chunk_runner(kernel.NUTS, False)  # compiled before the clock starts
    timer = threading.Timer(0.5, interrupt.stop)
    timer.start()
    res = run_chains(entry, [state], warmup_schedule(10), iconf, fconf, 20, 10, 1, False,
                     interrupt)
    timer.cancel()
    assert res.interrupted and res.n_done == 0 and res.draws.shape == (1, 0, 2)


# ----- items 11 and 12: real Ctrl-C, in a subprocess ------------------------

def run_script(body):
    """Run ``body`` in a fresh Python with the tests' imports; return the result."""
    script = "import sys\nsys.path.insert(0, %r)\n" % str(TESTS) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=SUBPROCESS_TIMEOUT, cwd=TESTS,
                          env=dict(os.environ, PYTHONWARNINGS="always"))


def test_ctrl_c_inside_an_endless_trajectory_returns_the_draws():
    """Normal, then flat after 20,000 gradients with max_treedepth=40: the
    trajectory after the switch never ends by itself."""
    out = run_script("""
        import os, signal, threading
        import numpy as np
        from logdens import samplers

        class NormalThenFlat:
            dim = 2
            calls = 0

            def log_density_gradient(self, theta):
                self.calls += 1
                if self.calls == 20000:
                    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
                if self.calls < 20000:
                    return -0.5 * float(theta @ theta), -theta
                return 0.0, np.zeros(2)

        idata = samplers.nuts(NormalThenFlat(), draws=10**6, tune=100, chains=1,
                              max_treedepth=40, progress=False)
        theta = idata.posterior["theta"].values
        print("KEPT", theta.shape[1], idata.posterior.attrs["interrupted"],
              np.isfinite(theta).all())
    """)
    assert out.returncode == 0, out.stderr
    kept, interrupted, finite = out.stdout.split()[1:]
    assert int(kept) > 0 and interrupted == "1" and finite == "True"
    assert "sampling interrupted" in out.stderr


def test_second_ctrl_c_while_building_the_output_keeps_the_draws():
    """Two presses 50 ms apart: the first stops sampling, the second lands
    while the (slow) log-likelihood is computed, which is left out."""
    out = run_script("""
        import os, signal, threading, time
        import numpy as np
        from logdens import samplers

        def two_presses():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGINT)

        class SlowLogLikelihood:
            dim = 2
            calls = 0

            def log_density_gradient(self, theta):
                self.calls += 1
                if self.calls == 5000:
                    threading.Thread(target=two_presses).start()
                return -0.5 * float(theta @ theta), -theta

            def pointwise_log_likelihood(self, theta):
                time.sleep(0.01)
                return {"y": -0.5 * theta**2}

        idata = samplers.nuts(SlowLogLikelihood(), draws=10**6, tune=100, chains=2,
                              progress=False)
        print("KEPT", idata.posterior.sizes["draw"] + idata.warmup_posterior.sizes["draw"]
              if "warmup_posterior" in idata.children else idata.posterior.sizes["draw"],
              idata.posterior.attrs["interrupted"], "log_likelihood" in idata.children)
    """)
    assert out.returncode == 0, out.stderr
    kept, interrupted, has_ll = out.stdout.split()[1:]
    assert int(kept) > 0 and interrupted == "1" and has_ll == "False"
    assert "lacks log_likelihood" in out.stderr and "Ctrl-C" in out.stderr


def test_no_module_is_imported_while_ctrl_c_is_handled():
    """Issue 36 item 11: a Ctrl-C that cuts an import short leaves the module
    half-initialized for the rest of the process.  In a fresh process, the
    first runs of nuts and chees import nothing while their handler is
    installed (a first Ctrl-C stopping the first run), and later runs work."""
    out = run_script("""
        import sys, warnings
        from contextlib import contextmanager
        import numpy as np
        import logdens as ld
        from logdens.samplers import interrupt, runner

        imported = []
        handling = interrupt.Interrupt.handling_sigint

        @contextmanager
        def watched(self):
            before = set(sys.modules)
            with handling(self) as installed:
                yield installed
            imported.extend(sorted(set(sys.modules) - before))

        interrupt.Interrupt.handling_sigint = watched
        update = runner._update_bar

        def update_then_ctrl_c(bar, done, stats, n_tune):
            update(bar, done, stats, n_tune)
            if done.min() >= 30:
                raise KeyboardInterrupt  # as Python raises it where the main thread is

        m = ld.Model()
        mu = m.param("mu", ld.Normal(0.0, 5.0))
        sigma = m.param("sigma", ld.HalfNormal(2.0))
        m.deterministic("twice_mu", 2.0 * mu)
        m.observe("y", ld.Normal(mu, sigma), np.array([0.5, 1.5, -0.2]))
        warnings.simplefilter("ignore")
        runner._update_bar = update_then_ctrl_c
        first = ld.nuts(m, draws=10**6, tune=20, chains=2, progress=True)
        runner._update_bar = update
        runs = [ld.nuts(m, draws=50, tune=50, chains=2, progress=False),
                ld.chees(m, chains=4, draws=50, tune=50, progress=True)]
        print("INTERRUPTED", first.posterior.attrs["interrupted"])
        print("IMPORTED", imported)
        print("GROUPS", *(",".join(sorted(r.children)) for r in runs))
    """)
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert lines["INTERRUPTED"] == "1"
    assert lines["IMPORTED"] == "[]"
    for groups in lines["GROUPS"].split():
        assert groups == "log_likelihood,observed_data,posterior,sample_stats"
