"""The LLM backend is isolated: a concurrency limit, a circuit breaker, Retry-After, the deadline.

Issue 19: two asks against an endpoint that never answered held the workers for minutes
(60 s timeout x 3 attempts each) and took every endpoint down with them.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from ragtrust import deadline
from ragtrust.deadline import Deadline
from ragtrust.errors import BackendError, DeadlineExceeded
from ragtrust.generation.backend import BackendGuard
from ragtrust.generation.openai import ChatClient

OK = {"choices": [{"message": {"content": "fine"}}]}
CHAT = [{"role": "user", "content": "hi"}]


def client(handler: Any, **kw: Any) -> ChatClient:
    return ChatClient("http://llm.test/v1", "m", transport=httpx.MockTransport(handler), backoff_s=0.0, **kw)


def test_the_breaker_opens_after_consecutive_failures_and_then_fails_fast() -> None:
    hits: list[int] = []

    def down(request: httpx.Request) -> httpx.Response:
        hits.append(1)
        return httpx.Response(503, text="overloaded")

    chat = client(down, max_retries=1, breaker_failures=2, breaker_cooldown_s=60)
    for _ in range(2):
        with pytest.raises(BackendError, match=r"HTTP 503.*\(2 attempts\)"):
            chat.chat(CHAT)
    assert len(hits) == 4
    with pytest.raises(BackendError, match="is unavailable: 2 failures in a row; the next try is in 60 s"):
        chat.chat(CHAT)
    assert len(hits) == 4  # refused without a request to the backend
    assert chat.guard.state == "open"


def test_a_half_open_trial_that_succeeds_closes_the_breaker() -> None:
    now = [0.0]
    guard = BackendGuard("http://llm.test/v1", failure_threshold=1, cooldown_s=10, clock=lambda: now[0])
    with guard.call(wait_s=0):
        guard.record_failure()
    assert guard.state == "open"
    now[0] = 11.0
    assert guard.state == "half-open"
    with guard.call(wait_s=0):
        guard.record_success()
    assert guard.state == "closed"


def test_replies_about_the_request_do_not_count_against_the_backend() -> None:
    chat = client(lambda r: httpx.Response(400, text="bad request"), breaker_failures=1)
    for _ in range(3):
        with pytest.raises(BackendError, match="rejected the request"):
            chat.chat(CHAT)
    assert chat.guard.state == "closed"


def test_retry_after_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    replies = iter([httpx.Response(429, headers={"Retry-After": "3"}, text="slow down"), httpx.Response(200, json=OK)])
    chat = client(lambda r: next(replies), max_retries=2)
    assert chat.chat(CHAT) == "fine"
    assert slept and slept[0] >= 3.0


def test_no_retry_runs_past_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    hits: list[int] = []

    def slow(request: httpx.Request) -> httpx.Response:
        hits.append(1)
        return httpx.Response(503, headers={"Retry-After": "30"}, text="busy")

    monkeypatch.setattr(time, "sleep", lambda s: None)
    chat = client(slow, max_retries=5)
    with deadline.bound(Deadline.after(5)), pytest.raises(BackendError, match=r"\(1 attempt\)"):
        chat.chat(CHAT)
    assert len(hits) == 1  # a 30 s Retry-After does not fit a 5 s budget: no second attempt


def test_the_request_timeout_is_capped_by_the_deadline() -> None:
    seen: list[float] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(float(request.extensions["timeout"]["read"]))
        return httpx.Response(200, json=OK)

    chat = client(record, timeout_s=60)
    with deadline.bound(Deadline.after(2)):
        chat.chat(CHAT)
    chat.chat(CHAT)
    assert seen[0] <= 2.0 and seen[1] == 60.0


def test_a_cancelled_request_sends_nothing() -> None:
    hits: list[int] = []
    chat = client(lambda r: hits.append(1) or httpx.Response(200, json=OK))
    budget = Deadline.after(60)
    budget.cancel("the client disconnected")
    with deadline.bound(budget), pytest.raises(DeadlineExceeded, match="the client disconnected"):
        chat.chat(CHAT)
    assert hits == []


def test_no_slot_within_the_deadline_is_a_busy_error() -> None:
    chat = client(lambda r: httpx.Response(200, json=OK), max_concurrency=1)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with chat.guard.call(wait_s=1):
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    holding.wait(5)
    try:
        with deadline.bound(Deadline.after(0.2)), pytest.raises(BackendError, match="is busy: 1 request"):
            chat.chat(CHAT)
    finally:
        release.set()
        thread.join(5)
    assert chat.chat(CHAT) == "fine"


def test_a_wait_cut_short_by_the_deadline_is_a_timeout_not_a_backend_error() -> None:
    def hung(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("no reply", request=request)

    chat = client(hung, timeout_s=60, max_retries=3, breaker_failures=1)
    with deadline.bound(Deadline.after(0.5)), pytest.raises(DeadlineExceeded, match="budget ran out after"):
        chat.chat(CHAT)
    assert chat.guard.state == "open"  # a backend that did not answer still counts against the breaker
    # without a deadline the same timeout is the backend's failure, retried, then a backend error
    free = client(hung, timeout_s=60, max_retries=1)
    with pytest.raises(BackendError, match=r"timed out after 60 s \(2 attempts\)"):
        free.chat(CHAT)
