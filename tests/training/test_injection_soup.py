"""``scripts/injection_soup.py``: the weight average of two int8 injection models, on the shipped file's weights."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest
from tests.training.conftest import load_script

pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def shipped() -> tuple[ModuleType, dict[str, Any]]:
    soup = load_script("injection_soup")
    _, inits, _ = soup.load(soup.folder("builtin"))
    return soup, inits


def _perturbed(soup: ModuleType, inits: dict[str, Any]) -> dict[str, Any]:
    """Another model of the same shape: every weight moved by noise, quantised again."""
    rng = np.random.default_rng(0)
    other = dict(inits)
    for name in [k for k in inits if k.endswith(soup.QUANTIZED)]:
        base = name[: -len(soup.QUANTIZED)]
        w = soup.dequantize(inits, base)
        w = w + rng.normal(0.0, 0.1 * float(np.abs(w).std()) + 1e-6, w.shape)
        for suffix, value in soup.quantize(w, inits[name], inits[base + soup.SCALE].shape).items():
            other[base + suffix] = value
    for name, value in inits.items():
        if name.endswith("bias") and value.dtype == np.float32:
            other[name] = value + np.float32(0.01)
    return other


def test_requantising_the_shipped_weights_is_exact(shipped: tuple[ModuleType, dict[str, Any]]) -> None:
    soup, inits = shipped
    for name in [k for k in inits if k.endswith(soup.QUANTIZED)]:
        base = name[: -len(soup.QUANTIZED)]
        again = soup.quantize(soup.dequantize(inits, base), inits[name], inits[base + soup.SCALE].shape)
        assert np.array_equal(again[soup.QUANTIZED], inits[name]), name


def test_the_ends_are_the_two_models_and_the_middle_is_their_average(
    shipped: tuple[ModuleType, dict[str, Any]],
) -> None:
    soup, a = shipped
    b = _perturbed(soup, a)
    assert soup.largest_error(soup.soup(a, b, 0.0), a) == 0.0
    assert soup.largest_error(soup.soup(a, b, 1.0), b) == 0.0
    mid = soup.soup(a, b, 0.5)
    base = "Attention_0_qkv_weight"
    expected = (soup.dequantize(a, base) + soup.dequantize(b, base)) / 2
    step = mid[base + soup.SCALE].astype(np.float64)
    # within half a quantisation step (the scale is stored in float32)
    assert np.all(np.abs(soup.dequantize(mid, base) - expected) <= step * (0.5 + 1e-4))
    bias = "inner.classifier.bias"
    assert np.allclose(mid[bias], a[bias] + np.float32(0.005))


def test_two_different_architectures_are_refused(shipped: tuple[ModuleType, dict[str, Any]]) -> None:
    soup, a = shipped
    b = {k: v for k, v in a.items() if k != "inner.classifier.bias"}
    with pytest.raises(SystemExit, match="differ in their initializers"):
        soup.soup(a, b, 0.5)
