from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest

from ragtrust.documents import Document, RetrievedDoc
from ragtrust.errors import BackendError, ConfigError
from ragtrust.retrieval.federated import FederatedRetriever
from ragtrust.retrieval.remote import RemoteHTTPRetriever
from ragtrust.testing import StaticRetriever


class FixedRetriever:
    """Returns fixed results in the given order (ranks as listed)."""

    def __init__(self, name: str, results: list[tuple[Document, float | None]]) -> None:
        self.name = name
        self.results = results

    def retrieve(self, query: str, top_k: int = 5) -> list[RetrievedDoc]:
        return [RetrievedDoc(d, s, i + 1, self.name) for i, (d, s) in enumerate(self.results[:top_k])]


class BlockingRetriever:
    """Blocks until released: a source that misses any deadline (no sleeps)."""

    def __init__(self, release: threading.Event) -> None:
        self.name = "slow"
        self.release = release

    def retrieve(self, query: str, top_k: int = 5) -> list[RetrievedDoc]:
        self.release.wait(timeout=30)
        return []


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # let the blocked worker thread finish


A = Document("a", "Use parameterised queries.", url="https://kb/a")
B = Document("b", "Hash passwords with Argon2id.", url="https://kb/b")
C = Document("c", "Enable HSTS on every site.", url="https://kb/c")


def test_failing_and_slow_sources_are_reported_and_others_answer(release: threading.Event) -> None:
    ok = StaticRetriever([A, B, C], name="local")
    down = StaticRetriever([A], name="down", fail=True)
    # a generous budget: the quick sources must answer within it on a loaded 2-core CI host
    fed = FederatedRetriever([ok, down, BlockingRetriever(release)], timeout_s=1.0)
    docs = fed.retrieve("parameterised queries", 2)
    assert [d.id for d in docs] == ["a", "b"]
    assert [d.rank for d in docs] == [1, 2]
    assert fed.last_warnings == [
        "retrieval source 'down' failed: retriever 'down' is down (simulated)",
        "retrieval source 'slow' timed out after 1 s",
    ]
    expected = ok.retrieve("parameterised queries", 2)
    assert [d.score for d in docs] == [d.score for d in expected]  # original cosine kept


def test_all_sources_failing_raises() -> None:
    fed = FederatedRetriever([StaticRetriever([A], name="x", fail=True), StaticRetriever([A], name="y", fail=True)])
    with pytest.raises(BackendError, match="all 2 federated retrieval sources failed"):
        fed.retrieve("q")


def test_rrf_fusion_dedup_and_best_score() -> None:
    a_copy = Document("a-remote", "Use  parameterised queries.", url="https://mirror/a")  # same content hash as A
    c_same_url = Document("c-remote", "HSTS snippet from a search engine.", url="https://kb/c")  # same URL as C
    s1 = FixedRetriever("s1", [(A, 0.9), (B, 0.5), (C, 0.2)])
    s2 = FixedRetriever("s2", [(c_same_url, 0.8), (a_copy, 0.7)])
    fed = FederatedRetriever([s1, s2], rrf_k=60)
    docs = fed.retrieve("q", 5)
    # RRF: a = 1/61 + 1/62, c = 1/63 + 1/61, b = 1/62
    assert [d.id for d in docs] == ["a", "c", "b"]
    assert fed.last_fused_scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fed.last_fused_scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fed.last_fused_scores["b"] == pytest.approx(1 / 62)
    assert [d.score for d in docs] == [0.9, 0.8, 0.5]  # best original cosine of each
    assert docs[0].retriever == "s1+s2" and docs[2].retriever == "s1"
    assert fed.last_warnings == []


def test_same_url_within_one_source_stays_distinct() -> None:
    chunk1 = Document("page#1", "First chunk of the page.", url="https://kb/page")
    chunk2 = Document("page#2", "Second chunk of the page.", url="https://kb/page")
    fed = FederatedRetriever([FixedRetriever("s", [(chunk1, 0.6), (chunk2, 0.5)])])
    assert [d.id for d in fed.retrieve("q", 5)] == ["page#1", "page#2"]


def test_max_fusion_orders_by_best_score() -> None:
    s1 = FixedRetriever("s1", [(A, 0.3), (B, 0.2)])
    s2 = FixedRetriever("s2", [(B, 0.1), (C, 0.95)])
    assert [d.id for d in FederatedRetriever([s1, s2], fusion="max").retrieve("q", 3)] == ["c", "a", "b"]
    # RRF: b = 1/62 + 1/61 > a = 1/61 > c = 1/62
    assert [d.id for d in FederatedRetriever([s1, s2]).retrieve("q", 3)] == ["b", "a", "c"]


def test_bad_configuration() -> None:
    with pytest.raises(ConfigError):
        FederatedRetriever([], timeout_s=1)
    with pytest.raises(ConfigError):
        FederatedRetriever([StaticRetriever([A])], fusion="borda")
    with pytest.raises(ConfigError):
        FederatedRetriever([StaticRetriever([A])], timeout_s=0)
    with pytest.raises(ConfigError):
        FederatedRetriever([object()])


def test_duplicate_source_names_are_disambiguated() -> None:
    fed = FederatedRetriever([StaticRetriever([A], name="s"), StaticRetriever([B], name="s", fail=True)])
    fed.retrieve("q")
    assert fed.source_names == ["s", "s#2"] and "'s#2' failed" in fed.last_warnings[0]


def _remote(handler) -> RemoteHTTPRetriever:  # type: ignore[no-untyped-def]
    return RemoteHTTPRetriever("http://search.test/q", transport=httpx.MockTransport(handler), name="web")


def test_remote_retriever_protocol() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json={
                "results": [
                    {"id": "r1", "text": "Use TLS 1.3.", "url": "https://kb/tls", "score": 0.8},
                    {"id": "r2", "text": "BM25 scored hit.", "score": 12.5},
                    {"text": "No id, no score.", "url": "https://kb/x"},
                ]
            },
        )

    docs = _remote(handler).retrieve("tls", 3)
    assert [(d.id, d.score, d.rank, d.retriever) for d in docs] == [
        ("r1", 0.8, 1, "web"),
        ("r2", None, 2, "web"),
        ("https://kb/x", None, 3, "web"),
    ]
    import json

    assert json.loads(seen[0].content) == {"query": "tls", "top_k": 3}


@pytest.mark.parametrize(
    ("handler", "match"),
    [
        (lambda r: httpx.Response(500, text="boom"), "HTTP 500"),
        (lambda r: httpx.Response(200, text="<html>"), "invalid JSON"),
        (lambda r: httpx.Response(200, json={"hits": []}), "expected"),
        (lambda r: httpx.Response(200, json={"results": [{"id": "x", "text": ""}]}), "non-empty 'text'"),
    ],
)
def test_remote_retriever_errors(handler, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(BackendError, match=match):
        _remote(handler).retrieve("q")


def test_remote_connection_error_inside_federation() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    fed = FederatedRetriever([StaticRetriever([A], name="local"), _remote(refuse)])
    assert [d.id for d in fed.retrieve("parameterised")] == ["a"]
    assert "cannot reach search endpoint http://search.test/q" in fed.last_warnings[0]


def test_sources_from_registry_specs() -> None:
    fed = FederatedRetriever([{"type": "remote", "params": {"url": "http://search.test/q", "name": "r"}}])
    assert isinstance(fed.sources[0], RemoteHTTPRetriever) and fed.source_names == ["r"]


class _TrickleStream(httpx.SyncByteStream):
    """A reply that arrives a byte at a time, each byte one (fake) second after the last."""

    def __init__(self, body: bytes, clock: list[float]) -> None:
        self.body = body
        self.clock = clock

    def __iter__(self) -> Iterator[bytes]:
        for i in range(len(self.body)):
            self.clock[0] += 1.0
            yield self.body[i : i + 1]


def test_remote_timeout_bounds_the_whole_reply_not_each_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # a server that keeps the connection alive by trickling its reply never trips httpx's
    # per-read timeout; timeout_s must still bound the request as a whole
    import ragtrust.retrieval.remote as remote

    clock = [0.0]
    monkeypatch.setattr(remote.time, "monotonic", lambda: clock[0])
    body = b'{"results": [{"id": "r1", "text": "Use TLS 1.3."}]}'
    r = RemoteHTTPRetriever(
        "http://search.test/q",
        transport=httpx.MockTransport(lambda _: httpx.Response(200, stream=_TrickleStream(body, clock))),
        timeout_s=10,
    )
    with pytest.raises(BackendError, match=r"search endpoint http://search.test/q timed out after 10 s"):
        r.retrieve("tls")
    assert clock[0] < len(body)  # stopped reading once the budget was spent


def test_the_same_id_from_two_sources_for_different_documents_stays_two_documents() -> None:
    # independent sources number their documents alike ("1", "2", ... or the remote
    # retriever's "remote-<rank>"); the fused set must still name each document once, or the
    # gate withholds one for the other's poison and reads a conflict between them as one
    # document contradicting itself
    wiki = FixedRetriever("wiki", [(Document("1", "Hash passwords with Argon2id."), 0.9)])
    forum = FixedRetriever("forum", [(Document("1", "Store passwords in plain text."), 0.8)])
    fed = FederatedRetriever([wiki, forum])
    docs = fed.retrieve("passwords", 5)
    assert [(d.id, d.document.text, d.retriever) for d in docs] == [
        ("1", "Hash passwords with Argon2id.", "wiki"),
        ("forum:1", "Store passwords in plain text.", "forum"),
    ]
    assert fed.last_warnings == [
        "retrieval sources 'wiki' and 'forum' both returned id '1' for different documents: "
        "the one from 'forum' is 'forum:1' here"
    ]
    # the same document from both (same text) is still one
    same = FixedRetriever("forum", [(Document("1", "Hash passwords with Argon2id."), 0.8)])
    assert [d.id for d in FederatedRetriever([wiki, same]).retrieve("passwords", 5)] == ["1"]


def test_two_unnamed_remote_sources_without_ids_give_distinct_ids() -> None:
    def reply(*texts: str) -> httpx.MockTransport:
        return httpx.MockTransport(lambda _: httpx.Response(200, json={"results": [{"text": t} for t in texts]}))

    a = RemoteHTTPRetriever("http://a.test/q", transport=reply("Hash passwords with Argon2id.", "Use TLS 1.3."))
    b = RemoteHTTPRetriever("http://b.test/q", transport=reply("Store passwords in plain text.", "Sessions expire."))
    ids = [d.id for d in FederatedRetriever([a, b]).retrieve("passwords", 4)]
    assert len(set(ids)) == 4, ids


def test_warnings_belong_to_the_thread_whose_search_had_them() -> None:
    # a server answers questions on several worker threads with one gate: the warnings a
    # thread reads after its search must be its own, not those of a search that ended since
    class DownForSome:
        name = "flaky"

        def retrieve(self, query: str, top_k: int = 5) -> list[RetrievedDoc]:
            if query == "down":
                raise BackendError("flaky is down")
            return []

    fed = FederatedRetriever([StaticRetriever([A], name="local"), DownForSome()])
    searched, other_done = threading.Event(), threading.Event()
    seen: list[list[str]] = []

    def first() -> None:
        fed.retrieve("down")
        searched.set()
        other_done.wait(timeout=30)
        seen.append(list(fed.last_warnings))

    worker = threading.Thread(target=first)
    worker.start()
    searched.wait(timeout=30)
    fed.retrieve("fine")  # another thread's search, with no failure, ends in between
    assert fed.last_warnings == []
    other_done.set()
    worker.join(timeout=30)
    assert seen == [["retrieval source 'flaky' failed: flaky is down"]]


@pytest.mark.parametrize("url", ["not a url", "ftp://search.test/q", "search.test/q", "http://", ""])
def test_remote_url_that_is_not_http_is_a_configuration_error(url: str) -> None:
    # said 'cannot reach search endpoint not a url: is it running?' at the first question
    with pytest.raises(ConfigError, match=r"RemoteHTTPRetriever url must be an http\(s\) URL"):
        RemoteHTTPRetriever(url)


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ({"id": {"a": 1}, "text": "Use TLS 1.3."}, r"result 1: 'id' must be a string or an integer, got dict"),
        ({"id": True, "text": "Use TLS 1.3."}, r"result 1: 'id' must be a string or an integer, got bool"),
        ({"id": "r1", "text": "Use TLS.", "url": ["https://kb/tls"]}, r"result 1: 'url' must be a string, got list"),
    ],
)
def test_remote_result_fields_of_the_wrong_type_are_backend_errors(row: dict[str, object], match: str) -> None:
    # were turned into the id "{'a': 1}" and the citation link "['https://kb/tls']"
    with pytest.raises(BackendError, match=match):
        _remote(lambda _: httpx.Response(200, json={"results": [row]})).retrieve("tls")


def test_remote_numeric_ids_are_kept_zero_included() -> None:
    reply = {"results": [{"id": 0, "text": "Use TLS 1.3.", "url": "https://kb/tls"}, {"id": 7, "text": "Use HSTS."}]}
    docs = _remote(lambda _: httpx.Response(200, json=reply)).retrieve("tls")
    assert [d.id for d in docs] == ["0", "7"]


def test_the_remote_api_key_is_not_in_its_repr() -> None:
    r = RemoteHTTPRetriever("http://search.test/q", api_key="sk-secret-123")
    assert "sk-secret-123" not in repr(r) and "http://search.test/q" in repr(r)
