"""The records ledger as an Atom 1.0 feed (``/records/feed.xml``)."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from kernelindex.views.ledger import LedgerEntry


def atom_feed(items: list[LedgerEntry], base_url: str, self_path: str, updated: str) -> bytes:
    """An Atom 1.0 document; ElementTree escapes every text, so record text stays text."""
    ns = "http://www.w3.org/2005/Atom"
    ET.register_namespace("", ns)
    feed = ET.Element(f"{{{ns}}}feed")

    def sub(parent, tag, text=None, **attrs):
        el = ET.SubElement(parent, f"{{{ns}}}{tag}", attrs)
        if text is not None:
            el.text = text
        return el

    sub(feed, "title", "kernelindex records ledger")
    sub(feed, "id", f"{base_url}/records")
    sub(feed, "updated", updated)
    sub(feed, "link", rel="self", href=base_url + self_path)
    sub(feed, "link", rel="alternate", href=f"{base_url}/records")
    author = sub(feed, "author")
    sub(author, "name", "kernelindex")
    for item in items:
        entry = sub(feed, "entry")
        sub(entry, "title", f"{item.kindTitle}: {item.title}")
        sub(entry, "id", f"{base_url}/records#{item.id}")
        sub(entry, "updated", item.at)
        if item.links.run:
            sub(entry, "link", rel="alternate", href=base_url + item.links.run)
        sub(entry, "summary", item.summary)
        sub(entry, "category", term=item.kind)
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(feed, encoding="utf-8")
