"""The suites of the protocol runner: which (dataset, attack strategy, K) cells a run covers.

Example:
    >>> [s.key for s in SUITES["quick"]]
    ['secure_coding/instruction_injection/k5', 'secure_coding/mixed/k5']
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragtrust.errors import ConfigError
from ragtrust.eval.attacks import ATTACK_STRATEGIES
from ragtrust.eval.datasets import DATASETS, canonical_dataset


@dataclass(frozen=True)
class RunSpec:
    """One cell of a suite: a dataset, an attack strategy and K."""

    dataset: str
    strategy: str
    k: int = 5

    @property
    def key(self) -> str:
        """``dataset/strategy/kK``."""
        return f"{self.dataset}/{self.strategy}/k{self.k}"


#: ``paper``: TruthfulQA (each strategy + mixed), FEVER mixed, secure coding (each + mixed),
#: plus TruthfulQA mixed at K = 3 for the K comparison
SUITES: Mapping[str, tuple[RunSpec, ...]] = {
    "paper": (
        *(RunSpec("truthfulqa", s, 5) for s in ATTACK_STRATEGIES),
        RunSpec("fever", "mixed", 5),
        *(RunSpec("secure_coding", s, 5) for s in ATTACK_STRATEGIES),
        RunSpec("truthfulqa", "mixed", 3),
    ),
    "quick": (RunSpec("secure_coding", "instruction_injection", 5), RunSpec("secure_coding", "mixed", 5)),
}


def parse_suite(
    suite: str, *, strategies: Sequence[str] | None = None, ks: Sequence[int] | None = None
) -> list[RunSpec]:
    """Run cells of a suite name or a spec list.

    ``suite`` is ``paper``, ``quick``, a dataset name (every strategy) or a comma list of
    ``dataset[:strategy]`` items. ``strategies`` keeps only those strategies; ``ks``
    replaces the K values.

    Example:
        >>> [s.key for s in parse_suite("kb:mixed,tqa:contradiction", ks=[3, 5])][1:3]
        ['secure_coding/mixed/k5', 'truthfulqa/contradiction/k3']
    """
    name = suite.strip()
    if not name:
        raise ConfigError("--suite is empty: use paper, quick, a dataset name or dataset:strategy items")
    if name in SUITES:
        specs = list(SUITES[name])
    else:
        specs = []
        for item in name.split(","):
            dataset, _, strategy = item.strip().partition(":")
            try:
                dataset = canonical_dataset(dataset)
            except ConfigError:
                if "," in name or ":" in name:
                    raise
                raise ConfigError(
                    f"unknown suite or dataset {name!r}; suites: {', '.join([*SUITES, 'threats'])}; "
                    f"datasets: {', '.join(DATASETS)}"
                ) from None
            for strat in [strategy.strip()] if strategy.strip() else list(ATTACK_STRATEGIES):
                if strat not in ATTACK_STRATEGIES:
                    raise ConfigError(f"unknown attack strategy {strat!r}; valid: {', '.join(ATTACK_STRATEGIES)}")
                specs.append(RunSpec(dataset, strat, 5))
    if strategies:
        unknown = [s for s in strategies if s not in ATTACK_STRATEGIES]
        if unknown:
            raise ConfigError(f"unknown attack strategy {unknown[0]!r}; valid: {', '.join(ATTACK_STRATEGIES)}")
        specs = [s for s in specs if s.strategy in strategies]
    if ks:
        if any(k < 1 for k in ks):
            raise ConfigError(f"K must be >= 1, got {list(ks)}")
        specs = [RunSpec(s.dataset, s.strategy, k) for s in specs for k in sorted(set(ks))]
    out = list(dict.fromkeys(specs))
    if not out:
        raise ConfigError(f"suite {suite!r} selects no runs")
    return out


__all__ = ["SUITES", "RunSpec", "parse_suite"]
