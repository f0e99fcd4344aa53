"""The report's figures: ROC curves, trust-score histograms and per-strategy bars (matplotlib).

Drawn with the Agg backend into ``figures/`` of the report folder; matplotlib comes with the
``eval`` extra and its absence names the install command.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragtrust.errors import MissingDependencyError
from ragtrust.eval.analysis import strategy_table
from ragtrust.eval.metrics import EVAL_INSTALL, roc_curve_points
from ragtrust.eval.stored_run import StoredRun, arrays, cells


def figures(run: StoredRun, out: Path) -> list[tuple[str, Path]]:
    """Write the PNG figures into ``out/figures``; ``(title, path)`` of each."""
    try:
        import matplotlib
    except ImportError as exc:
        raise MissingDependencyError("the report's figures (matplotlib)", EVAL_INSTALL) from exc

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = out / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    figures: list[tuple[str, Path]] = []
    all_cells = [c for c in cells(run) if c.repeat == 0]
    for dataset in sorted({c.dataset for c in all_cells}):
        group = [c for c in all_cells if c.dataset == dataset]
        fig, ax = plt.subplots(figsize=(5.5, 4.5))
        for cell in group:
            a = arrays(cell.valid)
            pts = roc_curve_points(a.y_doc, 1.0 - a.T)
            if pts is not None:
                ax.plot(pts[0], pts[1], label=f"{cell.strategy} K={cell.k}")
        ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=0.8)
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.set_title(f"ROC (document-level label): {dataset}")
        ax.legend(fontsize=7, loc="lower right")
        path = folder / f"roc_{dataset}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        figures.append((f"ROC curves, {dataset}", path))

        fig, ax = plt.subplots(figsize=(5.5, 4.0))
        clean = [float(s["T"]) for s in group[0].clean if s.get("T") is not None] if group else []
        poisoned = [float(s["T"]) for c in group for s in c.poisoned if s.get("label_doc") and s.get("T") is not None]
        bins = np.linspace(0, 1, 26).tolist()
        ax.hist(clean, bins=bins, alpha=0.6, label=f"clean (Part A, n={len(clean)})", density=True)
        if poisoned:
            ax.hist(poisoned, bins=bins, alpha=0.6, label=f"poisoned source (n={len(poisoned)})", density=True)
        tau = run.trust_config().tau
        ax.axvline(tau, color="black", linestyle=":", label=f"tau = {tau:.2f}")
        ax.set_xlabel("trust score T")
        ax.set_ylabel("density")
        ax.set_title(f"Trust scores: {dataset}")
        ax.legend(fontsize=7)
        path = folder / f"hist_{dataset}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        figures.append((f"Trust score histogram, {dataset}", path))

    rows = strategy_table(run, bootstrap=1)
    rows = [r for r in rows if r["repeat"] == 0]
    if rows:
        fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(rows)), 4.2))
        x = np.arange(len(rows))
        ax.bar(x - 0.2, [r["f1"] or 0.0 for r in rows], width=0.4, label="F1")
        ax.bar(x + 0.2, [r["roc_auc"] or 0.0 for r in rows], width=0.4, label="ROC-AUC")
        ax.set_xticks(x, [f"{r['dataset']}\n{r['strategy']}\nK={r['k']}" for r in rows], fontsize=6)
        ax.set_ylim(0, 1)
        ax.set_title("Detection per strategy (document-level label)")
        ax.legend(fontsize=7)
        path = folder / "strategies.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        figures.append(("F1 and ROC-AUC per strategy", path))
    return figures


__all__ = ["figures"]
