"""What the modelling examples share: their command line, and trace and posterior
plots drawn with matplotlib (ArviZ's own plotting lives in a separate package).

Every example takes ``--quick`` (a small data set and short chains, as the test
suite runs it), ``--out DIR`` (where the PNG charts go) and ``--seed``.
"""

import argparse
import io
import os

import numpy as np


def arguments(description):
    """The parsed command line of an example."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small data and short chains (CI)")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "output"),
                        help="directory for the PNG charts")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    return args


def _flat(idata, name):
    """Draws of variable ``name`` as (chains, draws, k): every element a column."""
    values = idata.posterior[name].values
    return values.reshape(values.shape[:2] + (-1,))


def trace_and_posterior(idata, names, path, truth=None):
    """One row per variable (its first three elements): the draws of every chain
    against iteration, and their histogram, with the true value where known."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(name, k) for name in names for k in range(min(3, _flat(idata, name).shape[2]))]
    fig, axes = plt.subplots(len(rows), 2, figsize=(10, 1.8 * len(rows)), squeeze=False)
    for (name, k), (left, right) in zip(rows, axes):
        draws = _flat(idata, name)[:, :, k]
        label = name if _flat(idata, name).shape[2] == 1 else f"{name}[{k}]"
        for chain in draws:
            left.plot(chain, lw=0.5)
            right.hist(chain, bins=30, histtype="step", density=True)
        if truth is not None and name in truth:
            right.axvline(np.ravel(truth[name])[k], color="k", ls="--", lw=1)
        left.set_ylabel(label)
    axes[0, 0].set_title("trace (one line per chain)")
    axes[0, 1].set_title("posterior (dashed: the true value)")
    fig.tight_layout()
    save(fig, path)


def save(fig, path):
    """Save ``fig`` as a PNG of 64 colours and close it: a chart's few line colours
    survive, and the file takes about a third of matplotlib's RGBA bytes (the
    docs site keeps these figures in the repository)."""
    import matplotlib.pyplot as plt
    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=80, format="png")
    plt.close(fig)
    Image.open(buffer).convert("RGB").quantize(64).save(path, optimize=True)
    print(f"saved {path}")


def recovered(idata, truth, sds=4.0):
    """Print each true value beside its posterior mean and sd; return whether every
    one lies within ``sds`` posterior sds (an example whose check fails says so)."""
    ok = True
    for name, value in truth.items():
        draws = _flat(idata, name)
        mean, sd = draws.mean(axis=(0, 1)), draws.std(axis=(0, 1))
        for k, v in enumerate(np.ravel(value)):
            inside = abs(mean[k] - v) <= sds * sd[k]
            ok &= bool(inside)
            if k < 3:
                print(f"  {name}[{k}]: true {v:8.3f}  posterior {mean[k]:8.3f} +- {sd[k]:.3f}"
                      f"{'' if inside else '   <- outside'}")
    print("every true value within", sds, "posterior sds:", ok)
    return ok


def median_time(fn, budget=0.2):
    """Median seconds per call of ``fn`` over repeats filling about ``budget`` s."""
    import time
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    inner = max(1, int(0.01 / once))
    samples = []
    for _ in range(max(5, int(budget / (once * inner)))):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return float(np.median(samples))


def jax_or_none():
    """``(jax, jax.numpy)`` in float64, or None when JAX is not installed (its
    columns are then left out: it is a peer, never a dependency)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def table_and_chart(title, sizes, times, path):
    """Print ``times`` ({column: [seconds per size]}) as a table of microseconds,
    and save them as a log-log chart of time per element against size."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = list(times)
    print(f"\n{title}\n| N | " + " | ".join(f"{c} us" for c in columns) + " |")
    print("|---:|" + "---:|" * len(columns))
    for k, n in enumerate(sizes):
        print(f"| {n:,} | " + " | ".join(f"{times[c][k] * 1e6:.2f}" for c in columns) + " |")
    fig, ax = plt.subplots(figsize=(6, 4))
    for c in columns:
        ax.loglog(sizes, np.array(times[c]) / np.array(sizes) * 1e9, marker="o", label=c)
    ax.set_xlabel("N")
    ax.set_ylabel("ns per element")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    save(fig, path)
