"""PyMC's and NumPyro's keyword names, accepted beside the canonical (scipy/Stan) ones.

One table, ``ALIASES``: for each distribution (by ``spec.name``) the
spellings it accepts besides its own keywords. A spelling is a keyword (or
a group of keywords read together) that sets canonical keywords, either to
the same values (``Normal(mu=0, sigma=1)`` is ``Normal(loc=0, scale=1)``)
or through a conversion where the other library's parameter means another
number (PyMC's precision ``tau`` is ``scale = tau ** -0.5``; PyMC's
``Exponential(scale=)`` is ``rate = 1 / scale``; PyMC's
``ZeroInflatedPoisson(psi=)`` is the probability of the Poisson part, so
``zi = 1 - psi``). Conversions are written with ``**``, ``-``, ``/`` and
numpy ufuncs, so they hold for numbers and for model expressions alike.

Positional arguments keep the canonical order: the spellings are keywords
only (NumPyro's ``Weibull(scale, concentration)`` positional order is not
ours; ``Weibull(scale=s, concentration=k)`` is).

Every registered distribution has an entry, empty where neither library
has other names for its parameters; ``tests/test_aliases.py`` checks that
and tests every spelling against scipy.
"""

import functools
import inspect
from typing import Callable, NamedTuple, Optional, Tuple

import numpy as np

from .constraints import InvalidArgumentError, is_numeric


class Spelling(NamedTuple):
    """Keywords ``given`` (read together) that set the canonical keywords ``to``."""

    given: Tuple[str, ...]
    to: Tuple[str, ...]
    source: str  # whose spelling: "PyMC" or "NumPyro"
    #: ``convert(*given values) -> tuple of values of to``; None: the same values.
    convert: Optional[Callable] = None
    #: the conversion as a user reads it, for errors and the docs
    formula: str = ""
    #: whether the conversion takes numbers only (a matrix factored once)
    numeric_only: bool = False


def rename(source, **pairs):
    """One spelling per ``alias=canonical`` pair, same values."""
    return tuple(Spelling((alias,), (canonical,), source) for alias, canonical in pairs.items())


def precision(alias, to, source="PyMC"):
    """PyMC's precision ``tau`` (or ``lam``) of a scale: ``scale = tau ** -0.5``."""
    return Spelling((alias,), (to,), source, lambda tau: (tau ** -0.5,), f"{to} = {alias} ** -0.5")


def complement(alias, to, source):
    """A probability of the other outcome: ``zi = 1 - psi``."""
    return Spelling((alias,), (to,), source, lambda q: (1.0 - q,), f"{to} = 1 - {alias}")


def _nb_from_pymc(n, p):
    # PyMC's NegativeBinomial(n, p) is scipy's nbinom(n, p): mean n (1 - p) / p
    return n * (1.0 - p) / p, n


def _nb_from_numpyro(total_count, probs):
    # NumPyro's NegativeBinomialProbs counts successes of probability probs
    # before total_count failures: mean total_count probs / (1 - probs)
    return total_count * probs / (1.0 - probs), total_count


def _gamma_from_moments(mu, sigma):
    return mu ** 2 / sigma ** 2, mu / sigma ** 2


def _inverse_gamma_from_moments(mu, sigma):
    # mean b / (a - 1), variance mean^2 / (a - 2)
    alpha = mu ** 2 / sigma ** 2 + 2.0
    return alpha, mu * (alpha - 1.0)


def _beta_from_moments(mu, sigma):
    kappa = mu * (1.0 - mu) / sigma ** 2 - 1.0
    return mu * kappa, (1.0 - mu) * kappa


def _beta_from_mean_count(mu, nu):
    return mu * nu, (1.0 - mu) * nu


def _inverse(matrix):
    return (np.linalg.inv(matrix),)


def _cholesky(matrix):
    try:
        return (np.linalg.cholesky(matrix),)
    except np.linalg.LinAlgError:
        raise InvalidArgumentError("the matrix is not positive definite (no Cholesky factor)") from None


def _steps_from_length(num_steps):
    if not (num_steps.ndim == 0 and float(num_steps).is_integer() and num_steps >= 1):
        raise InvalidArgumentError(f"num_steps={num_steps.tolist()!r} must be an integer >= 1 (the series length)")
    return (int(num_steps) - 1,)


NEGATIVE_BINOMIAL = (
    *rename("PyMC", alpha="phi"),
    Spelling(("n", "p"), ("mu", "phi"), "PyMC", _nb_from_pymc, "mu = n (1 - p) / p, phi = n"),
    *rename("NumPyro", mean="mu", concentration="phi"),
    Spelling(("total_count", "probs"), ("mu", "phi"), "NumPyro", _nb_from_numpyro,
             "mu = total_count probs / (1 - probs), phi = total_count"),
    # NumPyro's NegativeBinomialLogits: probs = logistic(logits), so probs / (1 - probs) = exp(logits)
    Spelling(("total_count", "logits"), ("mu", "phi"), "NumPyro", lambda n, logits: (n * np.exp(logits), n),
             "mu = total_count exp(logits), phi = total_count"),
)
NORMAL_LIKE = (*rename("PyMC", mu="loc", sigma="scale"), precision("tau", "scale"))

ALIASES = {
    "Normal": NORMAL_LIKE,
    "LogNormal": NORMAL_LIKE,
    "SkewNormal": NORMAL_LIKE,
    "TruncatedNormal": NORMAL_LIKE + rename("NumPyro", low="lower", high="upper"),
    "HalfNormal": (*rename("PyMC", sigma="scale"), precision("tau", "scale")),
    "StudentT": (*rename("PyMC", nu="df", mu="loc", sigma="scale"), precision("lam", "scale")),
    "HalfStudentT": (*rename("PyMC", nu="df", sigma="scale"), precision("lam", "scale")),
    "Cauchy": rename("PyMC", alpha="loc", beta="scale"),
    "HalfCauchy": rename("PyMC", beta="scale"),
    "Laplace": rename("PyMC", mu="loc", b="scale"),
    "Logistic": rename("PyMC", mu="loc", s="scale"),
    "Gumbel": rename("PyMC", mu="loc", beta="scale"),
    "VonMises": rename("PyMC", mu="loc", kappa="concentration"),
    "Rayleigh": rename("PyMC", sigma="scale"),
    "Uniform": rename("NumPyro", low="lower", high="upper"),
    "Exponential": (*rename("PyMC", lam="rate"),
                    Spelling(("scale",), ("rate",), "PyMC", lambda s: (1.0 / s,), "rate = 1 / scale")),
    "Gamma": (*rename("PyMC", alpha="concentration", beta="rate"),
              Spelling(("mu", "sigma"), ("concentration", "rate"), "PyMC", _gamma_from_moments,
                       "concentration = mu^2 / sigma^2, rate = mu / sigma^2")),
    # NumPyro's InverseGamma(concentration, rate): its "rate" is the scale (its docstring says so)
    "InverseGamma": (*rename("PyMC", alpha="concentration", beta="scale"), *rename("NumPyro", rate="scale"),
                     Spelling(("mu", "sigma"), ("concentration", "scale"), "PyMC", _inverse_gamma_from_moments,
                              "concentration = mu^2 / sigma^2 + 2, scale = mu (concentration - 1)")),
    "Weibull": rename("PyMC", alpha="concentration", beta="scale"),
    "Pareto": rename("PyMC", m="scale"),
    "ChiSquared": rename("PyMC", nu="df"),
    "Beta": (*rename("NumPyro", concentration1="alpha", concentration0="beta"),
             Spelling(("mu", "sigma"), ("alpha", "beta"), "PyMC", _beta_from_moments,
                      "kappa = mu (1 - mu) / sigma^2 - 1, alpha = mu kappa, beta = (1 - mu) kappa"),
             Spelling(("mu", "nu"), ("alpha", "beta"), "PyMC", _beta_from_mean_count,
                      "alpha = mu nu, beta = (1 - mu) nu")),
    "Poisson": (*rename("PyMC", mu="rate"),),
    "PoissonLog": (),
    "Bernoulli": rename("NumPyro", probs="p"),
    "BernoulliLogit": rename("NumPyro", logits="logit_p"),
    "Binomial": rename("NumPyro", total_count="n", probs="p"),
    "BinomialLogit": rename("NumPyro", total_count="n", logits="logit_p"),
    "Geometric": rename("NumPyro", probs="p"),
    "DiscreteUniform": rename("NumPyro", low="lower", high="upper"),
    "BetaBinomial": rename("NumPyro", concentration1="alpha", concentration0="beta", total_count="n"),
    "NegativeBinomial": NEGATIVE_BINOMIAL,
    "NegativeBinomialLog": (),
    "ZeroInflatedPoisson": (*rename("PyMC", mu="rate"), complement("psi", "zi", "PyMC"),
                            *rename("NumPyro", gate="zi")),
    "ZeroInflatedNegativeBinomial": (*rename("PyMC", alpha="phi"), complement("psi", "zi", "PyMC"),
                                     *rename("NumPyro", mean="mu", concentration="phi", gate="zi")),
    "HurdlePoisson": (*rename("PyMC", mu="rate"), complement("gate", "psi", "NumPyro")),
    "HurdleNegativeBinomial": (*rename("PyMC", alpha="phi"),
                               Spelling(("n", "p"), ("mu", "phi"), "PyMC", _nb_from_pymc,
                                        "mu = n (1 - p) / p, phi = n")),
    "Categorical": rename("NumPyro", probs="p"),
    "CategoricalLogit": rename("PyMC", logit_p="logits"),
    "Dirichlet": (*rename("PyMC", a="alpha"), *rename("NumPyro", concentration="alpha")),
    "DirichletMultinomial": (*rename("PyMC", a="alpha"),
                             *rename("NumPyro", concentration="alpha", total_count="n")),
    "Multinomial": rename("NumPyro", total_count="n", probs="p"),
    "MvNormal": (*rename("PyMC", mu="loc", chol="scale_tril"),
                 Spelling(("tau",), ("cov",), "PyMC", _inverse, "cov = inv(tau)", True),
                 *rename("NumPyro", covariance_matrix="cov"),
                 Spelling(("precision_matrix",), ("cov",), "NumPyro", _inverse, "cov = inv(precision_matrix)",
                          True)),
    "MvStudentT": (*rename("PyMC", nu="df", mu="loc", chol="scale_tril"),
                   Spelling(("Sigma",), ("scale_tril",), "PyMC", _cholesky, "scale_tril = cholesky(Sigma)", True),
                   Spelling(("scale",), ("scale_tril",), "PyMC", _cholesky, "scale_tril = cholesky(scale)", True),
                   Spelling(("tau",), ("scale_tril",), "PyMC", lambda tau: _cholesky(np.linalg.inv(tau)),
                            "scale_tril = cholesky(inv(tau))", True)),
    "LKJCholesky": (*rename("PyMC", n="dim", eta="concentration"), *rename("NumPyro", dimension="dim")),
    "LKJCorr": (*rename("PyMC", n="dim", eta="concentration"), *rename("NumPyro", dimension="dim")),
    "OrderedLogistic": rename("NumPyro", predictor="eta"),
    "OrderedProbit": (),
    "ZeroSumNormal": rename("NumPyro", scale="sigma"),
    "AR": (precision("tau", "sigma"),),
    # NumPyro's walk starts at Normal(0, scale) and num_steps is the whole length T
    "GaussianRandomWalk": (
        Spelling(("scale",), ("sigma", "init_sigma"), "NumPyro", lambda s: (s, s), "sigma = init_sigma = scale"),
        Spelling(("num_steps",), ("steps",), "NumPyro", _steps_from_length, "steps = num_steps - 1",
                 True)),
}


def bind(cls, args, kwargs):
    """``(keywords, notes)``: ``kwargs`` of a call ``cls(*args, **kwargs)`` with every
    spelling of ``ALIASES`` replaced by the canonical keywords it sets, and one
    note per conversion made (``scale = tau ** -0.5 from tau=4.0``) for errors.

    A parameter set twice (by position and keyword, or by two spellings) and
    an unknown keyword are TypeErrors naming the spellings.
    """
    if not kwargs:  # positional only: nothing to bind
        return kwargs, []
    name = cls.spec.name
    own = _keywords(cls)
    spellings = _by_keyword(name)
    passed = set(own) | ({"logits", "logit_p"} if cls.logit_form else set())
    bound = {keyword: f"argument {i + 1} ({keyword})" for i, keyword in enumerate(own[:len(args)])}
    out, notes, done = {}, [], set()

    def claim(keyword, spelled, value):
        if keyword in bound:
            raise TypeError(f"{name}: {keyword} given twice, as {bound[keyword]} and as {spelled}")
        bound[keyword], out[keyword] = spelled, value

    for key, value in kwargs.items():
        if key in passed:
            claim(key, key, value)
            continue
        if key not in spellings:
            also = f" (also spelled {', '.join(spellings)})" if spellings else ""
            raise TypeError(f"{name} has no parameter {key!r}; it takes {', '.join(own)}{also}")
        spelling = next((s for s in spellings[key] if set(s.given) <= set(kwargs)), spellings[key][0])
        if spelling in done:
            continue
        done.add(spelling)
        spelled = f"{', '.join(spelling.given)} ({spelling.source}'s spelling)"
        for keyword, value in zip(spelling.to, _converted(name, spelling, kwargs, notes)):
            claim(keyword, spelled, value)
    return out, notes


def _converted(name, spelling, kwargs, notes):
    """The canonical values ``spelling`` gives from ``kwargs``."""
    missing = [g for g in spelling.given if g not in kwargs]
    if missing:  # the first spelling that reads the keyword: name it and its partners
        raise TypeError(f"{name}: {', '.join(spelling.given)} ({spelling.source}'s spelling) go together; "
                        f"missing {', '.join(missing)}")
    values = [kwargs[g] for g in spelling.given]
    if spelling.convert is None:
        return values
    if spelling.numeric_only and not all(is_numeric(v) for v in values):
        raise InvalidArgumentError(f"{name}: {', '.join(spelling.given)}= takes numbers ({spelling.formula}, "
                                   "computed once when the distribution is built), not model expressions (a "
                                   "covariance of parameters: give its Cholesky factor as scale_tril=)")
    values = [np.asarray(v, dtype=float) if is_numeric(v) else v for v in values]
    try:
        with np.errstate(all="ignore"):  # an invalid result is named by the validation that follows
            converted = spelling.convert(*values)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(f"{name}: {', '.join(spelling.given)} ({spelling.source}'s spelling): "
                                   f"{error}") from None
    shown = ", ".join(f"{g}={v.tolist() if isinstance(v, np.ndarray) and v.size < 5 else v!r}"
                      for g, v in zip(spelling.given, values))
    notes.append(f"{spelling.formula} from {shown}")
    return converted


@functools.lru_cache(maxsize=None)
def _by_keyword(name):
    """Alias -> the spellings of distribution ``name`` that read it (Beta's mu:
    with sigma, or with nu)."""
    spellings = {}
    for spelling in ALIASES.get(name, ()):
        for alias in spelling.given:
            spellings.setdefault(alias, []).append(spelling)
    return spellings


@functools.lru_cache(maxsize=None)
def _keywords(cls):
    """The canonical keywords of ``cls``'s constructor in positional order: its
    spec's parameters where it takes ``*args`` (``Distribution.__init__``)."""
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return cls.spec.param_names
    return tuple(p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
