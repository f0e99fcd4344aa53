from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ragtrust.errors import InputError
from ragtrust.ingest.loaders import decode_bytes, html_to_text, is_licence_file, load_paths, markdown_metadata


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def test_formats_ids_urls_and_metadata(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    _write(root / "a.txt", "Plain text about TLS.")
    _write(root / "sub" / "b.md", "# Password storage\n\nUse argon2id.\n\n## Work factor\n\nTune it.\n")
    _write(
        root / "c.html",
        "<html><head><title>XSS</title><style>p{}</style></head><body><h1>Output encoding</h1>"
        "<p>Encode on output.</p><script>alert(1)</script></body></html>",
    )
    _write(
        root / "d.jsonl",
        json.dumps(
            {
                "id": "rule-1",
                "text": "Use CSRF tokens.",
                "url": "https://x.test/1",
                "metadata": {"cwe": "CWE-352"},
                "title": "CSRF",
            }
        )
        + "\n",
    )
    _write(root / "e.csv", "id,text,url,category\nr2,Validate redirects.,https://x.test/2,A01\n")
    report = load_paths([root])
    by_id = {d.id: d for d in report.documents}
    assert set(by_id) == {"kb/a.txt", "kb/sub/b.md", "kb/c.html", "rule-1", "r2"}
    assert report.skipped == []
    md = by_id["kb/sub/b.md"]
    assert md.metadata["title"] == "Password storage"
    assert [h[1] for h in md.metadata["headings"]] == ["Password storage", "Work factor"]
    assert md.text.startswith("# Password storage")  # raw markdown: spans index into the file
    assert md.url == (root / "sub" / "b.md").resolve().as_uri()
    html = by_id["kb/c.html"]
    assert "alert" not in html.text and "Encode on output." in html.text
    assert html.metadata["title"] == "XSS"
    assert by_id["rule-1"].url == "https://x.test/1"
    assert by_id["rule-1"].metadata["cwe"] == "CWE-352" and by_id["rule-1"].metadata["title"] == "CSRF"
    assert by_id["r2"].metadata["category"] == "A01" and by_id["r2"].text == "Validate redirects."


def test_ids_are_stable_across_working_directories(tmp_path: Path, monkeypatch) -> None:
    _write(tmp_path / "docs" / "x.md", "# X\n\ntext")
    first = [d.id for d in load_paths([tmp_path / "docs"]).documents]
    monkeypatch.chdir(tmp_path)
    second = [d.id for d in load_paths(["docs"]).documents]
    assert first == second == ["docs/x.md"]


def test_broken_files_are_skipped_with_reasons(tmp_path: Path) -> None:
    root = tmp_path / "in"
    _write(root / "good.txt", "fine")
    _write(root / "empty.txt", "")
    _write(root / "binary.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    noise = random.Random(0).randbytes(4000).replace(b"\x00", b"\x01")
    _write(root / "noise.txt", noise)
    _write(root / "image.png", b"\x89PNG")
    _write(root / "rows.jsonl", '{"id": "ok", "text": "good row"}\nnot json\n{"id": "x"}\n[1, 2]\n')
    _write(root / "bad.csv", "name,body\nx,y\n")
    report = load_paths([root, tmp_path / "missing.md"])
    assert sorted(d.id for d in report.documents) == ["in/good.txt", "ok"]
    reasons = {
        Path(p.split(":")[0]).name if ":" in p and not p.startswith("/") else Path(p).name: r for p, r in report.skipped
    }
    joined = "\n".join(f"{p} -> {r}" for p, r in report.skipped)
    assert "empty file" in joined
    assert "binary file" in joined
    assert "no reliable encoding detected" in joined
    assert "unsupported file type .png" in joined
    assert "invalid JSON" in joined
    assert "missing or empty 'text'" in joined
    assert "expected a JSON object" in joined
    assert "CSV needs a 'text' column" in joined
    assert "no such file or directory" in joined
    assert reasons  # every skip names its path


def test_non_utf8_text_is_decoded(tmp_path: Path) -> None:
    text = "Les données sensibles doivent être chiffrées avec une clé forte. " * 5
    _write(tmp_path / "fr.txt", text.encode("utf-16"))
    _write(tmp_path / "latin.txt", text.encode("cp1252"))
    report = load_paths([tmp_path / "fr.txt", tmp_path / "latin.txt"])
    assert report.skipped == []
    utf16, latin = report.documents
    assert utf16.text == text and utf16.metadata["encoding"] == "utf-16"
    assert "données" in latin.text and latin.metadata["encoding"] != "utf-8"


def test_include_exclude_and_duplicates(tmp_path: Path) -> None:
    root = tmp_path / "r"
    _write(root / "a.md", "a")
    _write(root / "b.txt", "b")
    _write(root / "drafts" / "c.md", "c")
    _write(root / ".hidden" / "d.md", "d")
    report = load_paths([root], include=["*.md"], exclude=["drafts/*"])
    assert [d.id for d in report.documents] == ["r/a.md"]
    _write(tmp_path / "one.jsonl", '{"id": "same", "text": "x"}\n')
    _write(tmp_path / "two.jsonl", '{"id": "same", "text": "y"}\n')
    dup = load_paths([tmp_path / "one.jsonl", tmp_path / "two.jsonl"])
    assert [d.text for d in dup.documents] == ["x"]
    assert "duplicate document id 'same'" in dup.skipped[0][1]


def test_a_duplicate_record_is_named_by_its_line_like_every_other_skipped_record(tmp_path: Path) -> None:
    _write(tmp_path / "kb.jsonl", '{"id": "r1", "text": "x"}\n\n{"id": "r1", "text": "y"}\n{"text": ""}\n')
    _write(tmp_path / "kb.csv", "id,text\nr1,z\n")
    report = load_paths([tmp_path / "kb.jsonl", tmp_path / "kb.csv"])
    first = f"{tmp_path / 'kb.jsonl'}:1"
    assert report.skipped == [
        (f"{tmp_path / 'kb.jsonl'}:4", "missing or empty 'text' (each record needs a non-empty text)"),
        (f"{tmp_path / 'kb.jsonl'}:3", f"duplicate document id 'r1' (first loaded from {first})"),
        (f"{tmp_path / 'kb.csv'}:2", f"duplicate document id 'r1' (first loaded from {first})"),
    ]


def test_licence_files_under_a_folder_are_skipped_not_ingested(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    _write(root / "Password_Storage.md", "# Passwords\n\nUse Argon2id.\n")
    _write(root / "licensing.md", "# Licensing your software\n\nPick a licence early.\n")
    licences = [
        "LICENSE",
        "LICENSE.md",
        "license.txt",
        "Licence.rst",
        "COPYING",
        "NOTICE",
        "LICENSE-MIT",
        "sub/UNLICENSE",
    ]
    for name in licences:
        _write(root / name, "Permission is hereby granted, free of charge, to any person.\n")
    report = load_paths([root])
    assert [d.id for d in report.documents] == ["kb/Password_Storage.md", "kb/licensing.md"]
    assert sorted(Path(p).relative_to(root).as_posix() for p, _ in report.skipped) == sorted(licences)
    assert all("licence file" in reason for _, reason in report.skipped)
    assert report.files == 2 + len(licences)
    # named directly, a licence file is read like any other file
    assert [d.id for d in load_paths([root / "LICENSE.md"]).documents] == ["LICENSE.md"]


def test_is_licence_file_is_case_insensitive_and_narrow() -> None:
    for name in ("LICENSE", "license.MD", "LICENCE.txt", "COPYING.LESSER", "Notice.md", "LICENSE-APACHE.txt"):
        assert is_licence_file(name), name
    for name in ("licensing.md", "notices_of_breach.md", "license_keys", "Copyright_Cheat_Sheet.md"):
        assert not is_licence_file(name), name


def test_markdown_headings_ignore_code_fences_and_html_headings() -> None:
    meta = markdown_metadata("# T\n\n```\n# not a heading\n```\n\n## S\n")
    assert [h[1] for h in meta["headings"]] == ["T", "S"]
    text, hmeta = html_to_text("<h2>Alpha</h2><p>one</p><h3>Beta</h3><p>two</p>")
    assert [(h[0], h[1]) for h in hmeta["headings"]] == [(2, "Alpha"), (3, "Beta")]
    assert all(text[h[2] : h[2] + len(h[1])] == h[1] for h in hmeta["headings"])


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("être", "latin-1"),
        ("Il faut être prudent.", "latin-1"),
        ("Il ne faut jamais stocker les mots de passe en clair. Pour être sûr, utilisez Argon2id.\n", "latin-1"),
        ("Schlüssel müssen regelmäßig gewechselt werden.", "latin-1"),
        ("Use TLS everywhere — “always”, not “mostly”.", "cp1252"),
    ],
)
def test_western_text_that_is_not_utf8_is_read_as_cp1252(tmp_path: Path, text: str, encoding: str) -> None:
    # charset-normalizer's best guess alone: Big5, UTF-16, cp1006 or cp775 here; cp1250 ("ętre") in the issue
    assert decode_bytes(text.encode(encoding)) == (text, "cp1252")
    _write(tmp_path / "fr.txt", text.encode(encoding))
    (doc,) = load_paths([tmp_path / "fr.txt"]).documents
    assert doc.text == text and doc.metadata["encoding"] == "cp1252"


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Zażółć gęślą jaźń. Hasła należy przechowywać bezpiecznie, używając funkcji skrótu.", "cp1250"),
        ("Пароли следует хранить с использованием медленной хеш-функции, например bcrypt.", "cp1251"),
    ],
)
def test_a_coherent_detection_of_another_code_page_is_used(text: str, encoding: str) -> None:
    assert decode_bytes(text.encode(encoding)) == (text, encoding)


def test_a_low_confidence_guess_is_reported_not_used() -> None:
    data = "パスワードは安全に保存してください。".encode("shift_jis")
    with pytest.raises(InputError, match=r"no reliable encoding detected \(best guess cp932, language coherence"):
        decode_bytes(data)


def test_a_record_with_an_unusable_id_is_skipped_and_the_rest_of_the_file_loads(tmp_path: Path) -> None:
    # a chunk-style id made the store refuse the whole batch; control characters and "." / ".."
    # segments are ids the HTTP ingest refuses (a listing hides them, a URL cannot carry them)
    rows = [
        {"id": "ok", "text": "Use TLS 1.2 or later."},
        {"id": "rule#1", "text": "Looks like a chunk of 'rule'."},
        {"id": "evil\x1b[2J", "text": "Clears the terminal."},
        {"id": "../up", "text": "Climbs a URL."},
    ]
    jsonl = _write(tmp_path / "r.jsonl", "\n".join(json.dumps(r) for r in rows))
    csv_file = _write(tmp_path / "r.csv", "id,text\nfine,Rotate keys yearly.\nrule#2,A chunk id.\n")
    report = load_paths([jsonl, csv_file])
    assert [d.id for d in report.documents] == ["ok", "fine"]
    reasons = dict(report.skipped)
    assert "looks like a chunk id" in reasons[f"{jsonl}:2"]
    assert "control or invisible characters" in reasons[f"{jsonl}:3"]
    assert "'.' or '..' path segment" in reasons[f"{jsonl}:4"]
    assert "looks like a chunk id" in reasons[f"{csv_file}:3"]


def test_a_store_under_an_ingested_folder_is_not_read_as_documents(tmp_path: Path) -> None:
    from ragtrust.ingest.store import Store
    from ragtrust.testing import HashingEmbedder

    kb = tmp_path / "kb"
    _write(kb / "a.md", "# TLS\n\nUse TLS 1.2 or later.")
    for root in (kb / "store", kb):  # a store in a subfolder, and a store in the folder itself
        Store.open(root, HashingEmbedder(), create=True).add(load_paths([kb]).documents)
        report = load_paths([kb])
        assert [d.id for d in report.documents] == ["kb/a.md"], report.skipped
        assert (str(root), "a ragtrust store: its own files are not documents") in report.skipped
        assert {path for path, _ in report.skipped} <= {str(kb), str(kb / "store")}  # no line per store file


def test_a_file_deleted_after_the_folder_was_listed_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # it read "not a regular file", which sent the user looking for a socket or a device
    from ragtrust.ingest import loaders

    (tmp_path / "kept.md").write_text("# Kept\n\nStill here.\n", encoding="utf-8")
    (tmp_path / "gone.md").write_text("# Gone\n\nDeleted mid-ingest.\n", encoding="utf-8")
    walk = loaders._walk

    def walk_then_delete(*args: object, **kwargs: object) -> list[tuple[Path, str]]:
        listed = walk(*args, **kwargs)  # type: ignore[arg-type]
        (tmp_path / "gone.md").unlink()
        return listed

    monkeypatch.setattr(loaders, "_walk", walk_then_delete)
    report = load_paths([tmp_path])
    assert [d.id.split("/")[-1] for d in report.documents] == ["kept.md"]
    [(path, reason)] = report.skipped
    assert path.endswith("gone.md") and reason.startswith(
        "no longer there (deleted or moved after the folder was listed)"
    )
