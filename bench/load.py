"""Load test of the ragtrust HTTP service: N concurrent clients for T seconds, loopback only.

Phases: warm-up (one client, ``--baseline`` seconds: the single-client throughput), then
``--clients`` clients for ``--duration`` seconds. Clients behave as well-written clients do: a
``503`` with ``Retry-After`` (the server's admission control shedding load) is counted as
*shed*, not as an error, and the client waits as told before its next request. Reported:
accepted throughput and latency, shed count and how fast sheds were answered, every other
response as an error, and the server's RSS after warm-up, at the end and at its peak.

``--questions store`` asks questions that never repeat (a soak): one per section of the served
store, "What does the <document title> say about <section heading>?", in a seeded order, so
every request retrieves a new set and the server's caches fill up to their bounds; the RSS
is sampled every 10 s (``server_rss_series_mib``) and ``server_rss_growth_second_half_pct``
compares the end of the run with its midpoint (flat memory: close to 0).

``--endpoint screen`` loads ``/v1/screen`` with the knowledge base's documents instead of
``/v1/ask``; ``--hung-llm`` points the server's generator at a local port that accepts
connections and never answers, and ``--ask-clients N`` adds N clients asking through it
beside the measured ones (issue 19: a hung LLM must leave ``/v1/screen`` p95 unchanged).

Either starts ``ragtrust serve`` itself on a store (and measures the server's peak RSS from
/proc), or drives a server already running on 127.0.0.1 (pass ``--server-pid`` for RSS).

    # build a store from the bundled secure-coding KB, serve it, 20 clients for 60 s
    python bench/load.py --build-kb /tmp/kb-store --clients 20 --duration 60 --json runs/load.json
    # an already running server
    python bench/load.py --url http://127.0.0.1:8000 --server-pid 1234 --clients 8 --duration 30

Reports throughput (requests/s), latency p50/p95/p99/max, errors by kind, and the server's
peak resident memory (VmHWM). Bounds: at most 256 clients, 900 seconds, loopback hosts only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

MAX_CLIENTS = 256
MAX_DURATION_S = 900.0
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}

FALLBACK_QUESTIONS = [
    "How do I prevent SQL injection?",
    "How should passwords be stored?",
    "How do I stop cross-site scripting?",
    "How should session cookies be configured?",
]


@dataclass
class Result:
    """What one load run measured."""

    url: str
    clients: int
    duration_s: float
    requests: int = 0
    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    throughput_rps: float = 0.0
    latency_ms: dict[str, float] = field(default_factory=dict)
    levels: dict[str, int] = field(default_factory=dict)
    shed: int = 0
    shed_latency_ms: dict[str, float] = field(default_factory=dict)
    single_client_rps: float | None = None
    server_peak_rss_mib: float | None = None
    server_rss_samples_max_mib: float | None = None
    server_rss_after_warmup_mib: float | None = None
    server_rss_end_mib: float | None = None
    server_rss_series_mib: list[tuple[float, float]] = field(default_factory=list)
    server_rss_growth_second_half_pct: float | None = None
    side_load: dict[str, int] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in [0, 100]) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def _rss_kib(pid: int, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _check_loopback(url: str) -> None:
    host = urlsplit(url).hostname or ""
    if host not in LOOPBACK and not host.startswith("127."):
        raise SystemExit(f"refusing to load-test {host!r}: loopback servers only (127.0.0.1, localhost, ::1)")


def store_questions(store: Path, seed: int = 0) -> list[str]:
    """One question per distinct (title, heading) of the store's chunks, in a seeded order."""
    import random

    from ragtrust.ingest.store import Store

    opened = Store.open(store, read_only=True)
    try:
        seen: dict[str, None] = {}
        for doc in opened.documents():
            title, heading = doc.metadata.get("title"), doc.metadata.get("heading")
            if title and heading and heading != title:
                seen[f"What does the {title} say about {heading}?"] = None
    finally:
        opened.close()
    questions = list(seen)
    random.Random(seed).shuffle(questions)
    if not questions:
        raise SystemExit(f"--questions store: no chunk of {store} has a title and a section heading")
    return questions


def load_questions(kind: str = "kb") -> list[str]:
    """Questions of the bundled knowledge base (or a fixed fallback list), or the 36 OWASP questions."""
    if kind == "owasp":
        from importlib.resources import files

        lines = files("ragtrust.data").joinpath("owasp_questions.jsonl").read_text().splitlines()
        return [json.loads(line)["question"] for line in lines if line.strip()]
    try:
        from ragtrust.data.kb import load_rules

        return [r.question for r in load_rules()]
    except Exception:
        return FALLBACK_QUESTIONS


def build_kb_store(path: Path) -> None:
    """Ingest the bundled secure-coding KB into a new store at ``path``."""
    from ragtrust.config import load_settings
    from ragtrust.data.kb import load_knowledge_base
    from ragtrust.ingest.store import Store
    from ragtrust.models.embedder import default_embedder

    settings = load_settings(env={})
    store = Store.open(path, default_embedder(settings), create=True, settings=settings)
    report = store.add(load_knowledge_base(), tier="vetted", source="bench")
    print(f"built store {path}: {report.to_dict()}", file=sys.stderr)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_LEXICAL_SERVER = """
import sys, uvicorn
from ragtrust.config import load_settings
from ragtrust.ingest.store import Store
from ragtrust.models.embedder import default_embedder
from ragtrust.pipeline import TrustGate
from ragtrust.server.app import create_app
from ragtrust.testing import LexicalNLI
store_path, port, workers, timeout_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) or None, float(sys.argv[4])
max_queue = int(sys.argv[5]) if sys.argv[5] != "default" else None
settings = load_settings()
embedder = default_embedder(settings)
store = Store.open(store_path, embedder, create=False, settings=settings)
gate = TrustGate.from_settings(settings, store=store, nli=LexicalNLI(), embedder=embedder)
app = create_app(settings, gate=gate, workers=workers, request_timeout_s=timeout_s, max_queue=max_queue)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
"""


def start_server(
    store: Path,
    port: int,
    workers: int | None,
    timeout_s: float,
    nli: str,
    max_queue: int | None = None,
    llm_url: str | None = None,
) -> subprocess.Popen[bytes]:
    """Serve ``store`` on 127.0.0.1 in a child process (``ragtrust serve``, or LexicalNLI).

    ``llm_url``: answer with the ``openai`` generator at this base URL (the hung-LLM scenario).
    """
    env = {k: v for k, v in os.environ.items() if k != "RAGTRUST_API_KEYS"}
    if llm_url is not None:
        env.update(RAGTRUST_GENERATOR__TYPE="openai", RAGTRUST_GENERATOR__BASE_URL=llm_url)
    if nli == "lexical":
        queue = "default" if max_queue is None else str(max_queue)
        argv = [str(store), str(port), str(workers or 0), str(timeout_s), queue]
        return subprocess.Popen([sys.executable, "-c", _LEXICAL_SERVER, *argv], env=env)
    cmd = [
        sys.executable,
        "-c",
        "from ragtrust.cli.main import main; main()",
        "serve",
        "--store",
        str(store),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--timeout",
        str(timeout_s),
        "--log-level",
        "warning",
    ]
    if max_queue is not None:
        cmd += ["--max-queue", str(max_queue)]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    return subprocess.Popen(cmd, env=env)


async def wait_ready(url: str, deadline_s: float, proc: subprocess.Popen[bytes] | None) -> None:
    """Poll ``/readyz`` until 200 (fails when the server exits or the deadline passes)."""
    end = time.monotonic() + deadline_s
    async with httpx.AsyncClient(base_url=url, timeout=5) as client:
        while time.monotonic() < end:
            if proc is not None and proc.poll() is not None:
                raise SystemExit(f"the server exited with code {proc.returncode}")
            try:
                ready = await client.get("/readyz")
                if ready.status_code == 200:
                    return
                if ready.json().get("error", {}).get("type") != "not_ready":
                    raise SystemExit(f"the server cannot serve: {ready.text}")
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.25)
    raise SystemExit(f"the server at {url} was not ready within {deadline_s:.0f} s")


Request = tuple[str, dict[str, Any]]


def build_requests(endpoint: str, questions_from: str = "kb", store: Path | None = None) -> list[Request]:
    """The request bodies the clients cycle through: questions, or 5 KB documents to screen."""
    if questions_from == "store":
        if store is None:
            raise SystemExit("--questions store needs --store or --build-kb (the served store)")
        questions = store_questions(store)
    else:
        questions = load_questions(questions_from)
    if endpoint == "ask":
        return [("/v1/ask", {"question": q}) for q in questions]
    from ragtrust.data.kb import load_knowledge_base

    docs = [{"id": d.id, "text": d.text, "url": d.url} for d in load_knowledge_base()]
    return [
        ("/v1/screen", {"documents": [docs[(i + j) % len(docs)] for j in range(5)], "query": q})
        for i, q in enumerate(questions)
    ]


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None


async def run_load(
    url: str,
    clients: int,
    duration_s: float,
    requests: list[Request],
    api_key: str | None,
    pid: int | None,
    *,
    side: list[Request] | None = None,
    side_clients: int = 0,
) -> Result:
    """Run the clients (and any side clients, not measured) and collect the numbers."""
    latencies: list[float] = []
    shed_latencies: list[float] = []
    errors: Counter[str] = Counter()
    side_statuses: Counter[str] = Counter()
    levels: Counter[str] = Counter()
    rss_max = 0
    series: list[tuple[float, float]] = []
    stop = time.monotonic() + duration_s
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    total_clients = clients + side_clients
    limits = httpx.Limits(max_connections=total_clients, max_keepalive_connections=total_clients)

    async with httpx.AsyncClient(base_url=url, timeout=120, headers=headers, limits=limits) as client:

        async def worker(index: int) -> None:
            i = index
            while time.monotonic() < stop:
                path, body = requests[i % len(requests)]
                i += clients
                started = time.perf_counter()
                try:
                    response = await client.post(path, json=body)
                except httpx.HTTPError as exc:
                    errors[type(exc).__name__] += 1
                    continue
                elapsed = time.perf_counter() - started
                if response.status_code == 200:
                    latencies.append(elapsed)
                    levels[response.json().get("trust_level", "?")] += 1
                    continue
                wait = _retry_after(response)
                if response.status_code == 503 and wait is not None and _kind(response) == "overloaded":
                    shed_latencies.append(elapsed)  # admission control: wait as told, then retry
                    await asyncio.sleep(max(0.0, min(wait, stop - time.monotonic())))
                    continue
                errors[f"{response.status_code} {_kind(response)}"] += 1

        async def side_worker(index: int) -> None:
            assert side is not None
            i = index
            while time.monotonic() < stop:
                path, body = side[i % len(side)]
                i += side_clients
                try:
                    response = await client.post(path, json=body)
                except httpx.HTTPError as exc:
                    side_statuses[type(exc).__name__] += 1
                    continue
                except asyncio.CancelledError:  # still waiting when the measured clients stopped
                    side_statuses["still waiting at the end"] += 1
                    raise
                side_statuses[f"{response.status_code} {_kind(response)}"] += 1
                wait = _retry_after(response)
                if wait is not None:
                    await asyncio.sleep(max(0.0, min(wait, stop - time.monotonic())))

        async def sampler() -> None:
            nonlocal rss_max
            if pid is not None:
                rss_max = await _sample_rss(pid, stop, series)

        started = time.monotonic()
        sides = [asyncio.create_task(side_worker(i)) for i in range(side_clients)] if side else []
        await asyncio.gather(sampler(), *(worker(i) for i in range(clients)))
        wall = time.monotonic() - started
        for task in sides:  # side requests still hanging are abandoned, not waited for
            task.cancel()
        await asyncio.gather(*sides, return_exceptions=True)

    total = len(latencies) + len(shed_latencies) + sum(errors.values())
    result = Result(url=url, clients=clients, duration_s=round(wall, 2), requests=total, ok=len(latencies))
    result.errors = dict(errors)
    result.levels = dict(levels)
    result.shed = len(shed_latencies)
    result.side_load = dict(side_statuses)
    result.throughput_rps = round(len(latencies) / wall, 3) if wall > 0 else 0.0
    result.latency_ms = _summary(latencies)
    result.shed_latency_ms = _summary(shed_latencies)
    if pid is not None:
        _fill_rss(result, pid, rss_max, series, wall)
    return result


async def _sample_rss(pid: int, stop: float, series: list[tuple[float, float]]) -> int:
    """Sample the server's RSS every 0.5 s until ``stop``, one point every 10 s into ``series``; the peak (KiB)."""
    started = next_point = time.monotonic()
    peak = 0
    while time.monotonic() < stop:
        rss = _rss_kib(pid, "VmRSS") or 0
        peak = max(peak, rss)
        if time.monotonic() >= next_point:
            series.append((round(time.monotonic() - started, 1), round(rss / 1024, 1)))
            next_point += 10.0
        await asyncio.sleep(0.5)
    return peak


def _fill_rss(result: Result, pid: int, rss_max: int, series: list[tuple[float, float]], wall: float) -> None:
    """The server's peak, end and sampled RSS, and its growth over the second half of the run."""
    hwm = _rss_kib(pid, "VmHWM")
    result.server_peak_rss_mib = round(hwm / 1024, 1) if hwm else None
    result.server_rss_samples_max_mib = round(rss_max / 1024, 1) if rss_max else None
    now = _rss_kib(pid, "VmRSS")
    result.server_rss_end_mib = round(now / 1024, 1) if now else None
    result.server_rss_series_mib = series
    if now and series:
        middle = min(series, key=lambda point: abs(point[0] - wall / 2))[1]
        result.server_rss_growth_second_half_pct = round(100 * (now / 1024 - middle) / middle, 1)


def _kind(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["type"])
    except (ValueError, KeyError, TypeError):
        return "unknown"


def _summary(seconds: list[float]) -> dict[str, float]:
    if not seconds:
        return {}
    ms = [x * 1000 for x in seconds]
    return {
        "p50": round(percentile(ms, 50), 1),
        "p95": round(percentile(ms, 95), 1),
        "p99": round(percentile(ms, 99), 1),
        "max": round(max(ms), 1),
        "mean": round(sum(ms) / len(ms), 1),
    }


class HungServer:
    """A port on 127.0.0.1 that accepts connections and never answers (a hung LLM endpoint)."""

    def __init__(self) -> None:
        import threading

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.held.append(conn)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        for conn in self.held:
            conn.close()
        self.sock.close()


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="a running server on a loopback address")
    target.add_argument("--store", type=Path, help="start `ragtrust serve` on this store")
    target.add_argument("--build-kb", type=Path, help="build a store from the bundled KB here (if absent), serve it")
    parser.add_argument("--server-pid", type=int, help="pid of the --url server, for its peak RSS")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument(
        "--workers", type=int, help="server workers per lane (when started here; default: one per 2 cores)"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="server per-request timeout (when started here)")
    parser.add_argument(
        "--nli",
        choices=("builtin", "lexical"),
        default="builtin",
        help="NLI of a server started here: the shipped model, or ragtrust.testing.LexicalNLI (server-path only)",
    )
    parser.add_argument("--max-queue", type=int, help="server queue bound per lane (when started here)")
    parser.add_argument("--endpoint", choices=("ask", "screen"), default="ask", help="what the clients call")
    parser.add_argument(
        "--questions",
        choices=("kb", "owasp", "store"),
        default="kb",
        help="the KB's 40 questions, the 36 OWASP questions, or never-repeating questions from the served store",
    )
    parser.add_argument("--baseline", type=float, default=20.0, help="seconds of single-client warm-up first")
    parser.add_argument("--hung-llm", action="store_true", help="answer through an LLM endpoint that never answers")
    parser.add_argument("--ask-clients", type=int, default=0, help="side clients asking (with --hung-llm)")
    parser.add_argument("--json", type=Path, help="also write the result as JSON here")
    args = parser.parse_args(argv)

    if not 1 <= args.clients <= MAX_CLIENTS:
        parser.error(f"--clients must be in 1..{MAX_CLIENTS}")
    if not 0 < args.duration <= MAX_DURATION_S:
        parser.error(f"--duration must be in (0, {MAX_DURATION_S:g}] seconds")
    if args.hung_llm and args.url:
        parser.error("--hung-llm needs a server started here (--store or --build-kb)")

    proc = None
    hung = HungServer() if args.hung_llm else None
    pid = args.server_pid
    if args.url:
        url = args.url.rstrip("/")
        _check_loopback(url)
    else:
        store = args.store or args.build_kb
        from ragtrust.ingest.store import store_exists

        if args.build_kb and not store_exists(store):
            build_kb_store(store)
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        llm_url = hung.url if hung is not None else None
        proc = start_server(store, port, args.workers, args.timeout, args.nli, args.max_queue, llm_url)
        pid = proc.pid
    requests = build_requests(args.endpoint, args.questions, args.store or args.build_kb)
    side = build_requests("ask") if args.ask_clients else None
    key = os.environ.get("RAGTRUST_API_KEY")
    try:
        asyncio.run(wait_ready(url, 180, proc))
        single = None
        if args.baseline > 0:
            # never-repeating questions: the warm-up takes them from the other end of the list
            warm = requests[::-1] if args.questions == "store" else requests
            single = asyncio.run(run_load(url, 1, args.baseline, warm, key, pid))
        rss_warm = _rss_kib(pid, "VmRSS") if pid is not None else None
        result = asyncio.run(
            run_load(url, args.clients, args.duration, requests, key, pid, side=side, side_clients=args.ask_clients)
        )
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        if hung is not None:
            hung.close()
    if single is not None:
        result.single_client_rps = single.throughput_rps
    result.server_rss_after_warmup_mib = round(rss_warm / 1024, 1) if rss_warm else None
    result.environment = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "endpoint": args.endpoint,
        "questions": args.questions,
        "server_workers": args.workers if proc is not None else None,
        "server_max_queue": args.max_queue if proc is not None else None,
        "nli": args.nli if proc is not None else None,
        "hung_llm": args.hung_llm,
        "ask_clients": args.ask_clients,
        "baseline_s": args.baseline,
        "load_1min": round(os.getloadavg()[0], 2),
    }
    text = json.dumps(asdict(result), indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    return 0 if not result.errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
