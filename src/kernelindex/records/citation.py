"""How to cite a record: permalink by digest, digest, access date, as BibTeX and CSL-JSON.

A citation names the record by its content digest, so what is cited can be checked byte for
byte later, even after the record was superseded or retracted (the permalink then says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

_BIBTEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "%": r"\%",
    "&": r"\&",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "^": r"\^{}",
    "~": r"\~{}",
}


@dataclass(frozen=True)
class Citation:
    digest: str
    permalink: str
    title: str
    authors: tuple[str, ...]
    issued: date | None
    accessed: date
    kind: str
    publisher: str = "KernelIndex"

    @property
    def key(self) -> str:
        return "kernelindex-" + self.digest.removeprefix("sha256:")[:12]


def citation_for(
    record: dict[str, Any], record_digest: str, base_url: str, accessed: date, publisher: str = "KernelIndex"
) -> Citation:
    """Collect what a citation needs from a record's metadata and spec."""
    metadata = record.get("metadata") or {}
    spec = record.get("spec") or {}
    authors = tuple(
        author.get("name") or author.get("github")
        for author in metadata.get("authors") or []
        if author.get("name") or author.get("github")
    )
    if not authors:
        source = (spec.get("sourceNative") or {}).get("source")
        attester = (spec.get("attester") or {}).get("name")
        authors = (attester or source or f"{publisher} contributors",)
    observed = spec.get("observedAt")
    return Citation(
        digest=record_digest,
        permalink=base_url.rstrip("/") + "/r/" + record_digest,
        title=metadata.get("title") or metadata.get("name") or f"{record.get('kind', 'Record')} {record_digest[:19]}",
        authors=authors,
        issued=date.fromisoformat(observed[:10]) if observed else None,
        accessed=accessed,
        kind=record.get("kind", "Record"),
        publisher=publisher,
    )


def bibtex(citation: Citation) -> str:
    fields = [
        ("title", "{" + _bibtex_escape(citation.title) + "}"),
        ("author", " and ".join("{" + _bibtex_escape(name) + "}" for name in citation.authors)),
        ("howpublished", r"\url{" + citation.permalink + "}"),
        ("url", citation.permalink),
        ("publisher", _bibtex_escape(citation.publisher)),
        ("note", _bibtex_escape(f"{citation.kind} record, content digest {citation.digest}")),
        ("urldate", citation.accessed.isoformat()),
    ]
    if citation.issued is not None:
        fields.insert(2, ("year", str(citation.issued.year)))
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@misc{{{citation.key},\n{body}\n}}\n"


def csl_json(citation: Citation) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": citation.key,
        "type": "dataset",
        "title": citation.title,
        "author": [{"literal": name} for name in citation.authors],
        "publisher": citation.publisher,
        "URL": citation.permalink,
        "note": f"{citation.kind} record, content digest {citation.digest}",
        "accessed": {"date-parts": [_date_parts(citation.accessed)]},
    }
    if citation.issued is not None:
        item["issued"] = {"date-parts": [_date_parts(citation.issued)]}
    return item


def _date_parts(day: date) -> list[int]:
    return [day.year, day.month, day.day]


def _bibtex_escape(text: str) -> str:
    return "".join(_BIBTEX_SPECIAL.get(char, char) for char in text)
