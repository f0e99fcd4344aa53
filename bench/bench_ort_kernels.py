"""Why the NLI export leaves residual+LayerNorm and bias+GELU unfused: kernel times and an A/B.

Usage (numbers go to docs/benchmarks.md with the machine noted):
    python bench/bench_ort_kernels.py [--ab OLD.onnx NEW.onnx] [--profile MODEL.onnx]

* kernels: ONNX Runtime CPU kernels in isolation on BERT-sized tensors (32 x 128 x 384, and
  32 x 128 x 1536 for GELU): fused SkipLayerNormalization vs Add + LayerNormalization, fused
  BiasGelu vs Add + Gelu, and an int8 MatMulInteger (4096 x 384 x 1536) for the GEMM rate;
* ``--ab``: two NLI ONNX files timed in one process on the same feeds (random token ids,
  batch 32 x 128), three alternating rounds of four runs, so host-speed drift hits both;
* ``--profile``: the share of kernel time per operator type (ONNX Runtime profiler).

Sessions use 2 threads and the fusions ``OnnxNLI`` disables (``SLOW_FUSIONS``). Every time is
the mean of ``--reps`` runs after one warm-up run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
import tempfile
import time
from typing import Any

import numpy as np

from ragtrust.models.embedder import SLOW_FUSIONS

BATCH, SEQ, HIDDEN, FFN = 32, 128, 384, 1536


def _session(model: Any, threads: int, profile: bool = False, disabled: tuple[str, ...] = ()) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.enable_profiling = profile
    if profile:
        options.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    source = model if isinstance(model, str) else model.SerializeToString()
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled))


def _ms(session: Any, feeds: dict[str, np.ndarray], reps: int) -> float:
    session.run(None, feeds)
    start = time.perf_counter()
    for _ in range(reps):
        session.run(None, feeds)
    return (time.perf_counter() - start) / reps * 1000


def kernels(threads: int, reps: int) -> dict[str, float]:
    """Milliseconds per call of each kernel variant (graph optimisations off: no re-fusing)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    def graph(nodes: list[Any], inputs: dict[str, list[int]], output: list[int], inits: list[Any]) -> Any:
        g = helper.make_graph(
            nodes,
            "k",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, output)],
            inits,
        )
        return helper.make_model(
            g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
        )

    def run(model: Any, feeds: dict[str, np.ndarray]) -> float:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        s = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return round(_ms(s, feeds, reps), 2)

    rng = np.random.default_rng(0)
    h = [BATCH, SEQ, HIDDEN]
    f = [BATCH, SEQ, FFN]
    a, b = rng.standard_normal(h, dtype=np.float32), rng.standard_normal(h, dtype=np.float32)
    x = rng.standard_normal(f, dtype=np.float32)
    gamma = numpy_helper.from_array(np.ones(HIDDEN, np.float32), "g")
    beta = numpy_helper.from_array(np.zeros(HIDDEN, np.float32), "b")
    bias = numpy_helper.from_array(np.zeros(FFN, np.float32), "bias")
    skip = helper.make_node(
        "SkipLayerNormalization", ["A", "B", "g", "b"], ["Y"], domain="com.microsoft", epsilon=1e-12
    )
    add_ln = [
        helper.make_node("Add", ["A", "B"], ["S"]),
        helper.make_node("LayerNormalization", ["S", "g", "b"], ["Y"], epsilon=1e-12, axis=-1),
    ]
    bias_gelu = helper.make_node("BiasGelu", ["X", "bias"], ["Y"], domain="com.microsoft")
    add_gelu = [
        helper.make_node("Add", ["X", "bias"], ["S"]),
        helper.make_node("Gelu", ["S"], ["Y"], domain="com.microsoft"),
    ]
    k, n, m = HIDDEN, FFN, BATCH * SEQ
    weights = numpy_helper.from_array(rng.integers(-127, 127, (k, n)).astype(np.int8), "W")
    mm = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "W"], ["Y"])],
        "mm",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [m, k])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, [m, n])],
        [weights],
    )
    mm_ms = run(
        helper.make_model(mm, opset_imports=[helper.make_opsetid("", 17)]),
        {"A": rng.integers(0, 255, (m, k)).astype(np.uint8)},
    )
    return {
        "SkipLayerNormalization 32x128x384 ms": run(
            graph([skip], {"A": h, "B": h}, h, [gamma, beta]), {"A": a, "B": b}
        ),
        "Add + LayerNormalization 32x128x384 ms": run(
            graph(add_ln, {"A": h, "B": h}, h, [gamma, beta]), {"A": a, "B": b}
        ),
        "BiasGelu 32x128x1536 ms": run(graph([bias_gelu], {"X": f}, f, [bias]), {"X": x}),
        "Add + Gelu 32x128x1536 ms": run(graph(add_gelu, {"X": f}, f, [bias]), {"X": x}),
        "MatMulInteger 4096x384x1536 ms": mm_ms,
        "MatMulInteger TOPS": round(2 * m * k * n / (mm_ms / 1000) / 1e12, 2),
    }


def _feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 20000, (BATCH, SEQ)).astype(np.int64)
    return {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}


def ab(old: str, new: str, threads: int) -> dict[str, Any]:
    """Pairs/s of two ONNX files, three alternating rounds of four runs each."""
    feeds = _feeds()
    sessions = {old: _session(old, threads, disabled=SLOW_FUSIONS), new: _session(new, threads, disabled=SLOW_FUSIONS)}
    rounds: dict[str, list[float]] = {old: [], new: []}
    for _ in range(3):
        for path, s in sessions.items():
            rounds[path].append(round(BATCH * 4 / (_ms(s, feeds, 4) * 4 / 1000), 1))
    return {path: {"rounds_pairs_per_s": r, "median": statistics.median(r)} for path, r in rounds.items()}


def profile(path: str, threads: int) -> dict[str, float]:
    """Percent of kernel time per operator type over three runs."""
    s = _session(path, threads, profile=True, disabled=SLOW_FUSIONS)
    feeds = _feeds()
    for _ in range(3):
        s.run(None, feeds)
    with open(s.end_profiling(), encoding="utf-8") as handle:
        events = json.load(handle)
    per_op: collections.Counter[str] = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per_op[e["args"]["op_name"]] += e["dur"]
    total = sum(per_op.values())
    return {op: round(100 * t / total, 1) for op, t in per_op.most_common(8)}


def main() -> None:
    """Run what was asked and print one JSON object."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--ab", nargs=2, metavar=("OLD", "NEW"))
    ap.add_argument("--profile")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    out: dict[str, Any] = {
        "machine": f"{platform.machine()}, {args.threads} threads",
        "time_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }
    out["kernels"] = kernels(args.threads, args.reps)
    if args.ab:
        out["ab_batch32_len128"] = ab(args.ab[0], args.ab[1], args.threads)
    if args.profile:
        out["profile_percent"] = profile(args.profile, args.threads)
    print(json.dumps(out, indent=2))  # noqa: T201 - the benchmark's report


if __name__ == "__main__":
    main()
