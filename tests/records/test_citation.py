"""Citations name a record by digest and stay well-formed whatever its title holds."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

from kernelindex.records.canonical import digest
from kernelindex.records.citation import bibtex, citation_for, csl_json

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "kernelindex" / "sample"


def _seed_run() -> dict:
    return json.loads((SAMPLE / "sol-042-ac4k-submission-19969.json").read_text())["run"]


def test_seed_run_citation_has_permalink_digest_and_dates() -> None:
    run = _seed_run()
    run_digest = digest(run)
    cite = citation_for(run, run_digest, "https://index.example/", date(2026, 11, 29))
    assert cite.permalink == f"https://index.example/r/{run_digest}"
    text = bibtex(cite)
    assert text.startswith("@misc{kernelindex-" + run_digest[7:19] + ",")
    assert run_digest in text and "urldate = {2026-11-29}" in text and "year = {2026}" in text
    item = csl_json(cite)
    assert item["URL"] == cite.permalink
    assert item["accessed"] == {"date-parts": [[2026, 11, 29]]}
    assert item["issued"] == {"date-parts": [[2026, 7, 10]]}
    assert run_digest in item["note"]
    assert json.loads(json.dumps(item)) == item


def test_bibtex_escapes_specials_and_keeps_braces_balanced() -> None:
    run = _seed_run()
    run["metadata"]["title"] = r"50% faster {moe} & co_op #1 \o/ ~x^2 $5"
    cite = citation_for(run, digest(run), "https://index.example", date(2026, 11, 29))
    text = bibtex(cite)
    depth = 0
    for index, char in enumerate(text):
        if char in "{}" and (index == 0 or text[index - 1] != "\\"):
            depth += 1 if char == "{" else -1
            assert depth >= 0
    assert depth == 0
    assert re.search(r"50\\% faster \\\{moe\\\} \\& co\\_op \\#1", text)
    assert csl_json(cite)["title"] == run["metadata"]["title"]
