"""The command line: ``python -m logdens warmup [--all]``.

``warmup`` compiles the samplers and the common distributions' kernels once
at set-up (numba caches them on disk), so that the first ``ld.nuts`` of a
user's first model does not spend seconds compiling them
(:mod:`logdens.samplers.warmup`, :mod:`logdens.warmup`).
"""

import argparse
import sys


def main(argv=None):
    """Run the command line; returns the exit status (1: the warm-up failed)."""
    parser = argparse.ArgumentParser(prog="python -m logdens")
    commands = parser.add_subparsers(dest="command", required=True)
    warm = commands.add_parser(
        "warmup", help="compile the samplers and common kernels into numba's cache (once per "
                       "install)",
        description="Compile what ld.nuts uses with its defaults, and the common "
                    "distributions' kernels, into numba's disk cache, so that later processes "
                    "load them instead of compiling them.")
    warm.add_argument("--all", action="store_true", dest="everything",
                      help="also the other samplers and variants (Stan's warmup, dense metric, "
                           "HMC, ChEES, ADVI, Pathfinder, external log densities)")
    args = parser.parse_args(argv)
    from logdens.samplers.warmup import Entry, WarmupError, warmup
    from logdens.warmup import compile_common_model
    try:
        warmup(args.everything, extra=[Entry("kernels of the common distributions (a small model)",
                                             compile_common_model)])
    except WarmupError as err:
        print(f"\nlogdens warmup failed: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
