"""Shields-style SVG badges: a grey label and a coloured message, text escaped, no script."""

from __future__ import annotations

from xml.sax.saxutils import escape

COLOURS = {"replicated": "#2f7d32", "verified": "#2f7d32", "reproducible": "#2f5fa7", "reported": "#8a6d1f"}
GREY = "#555"
CHAR_WIDTH = 6.5  # Verdana 11px averages about this; the badge is a rough fit, like shields.io's


def badge_svg(label: str, message: str, colour: str) -> str:
    lw = int(len(label) * CHAR_WIDTH + 12)
    mw = int(len(message) * CHAR_WIDTH + 12)
    width = lw + mw
    label_x, message_x = lw / 2, lw + mw / 2
    label, message = escape(label), escape(message)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" '
        f'aria-label="{label}: {message}"><title>{label}: {message}</title>'
        f'<rect width="{lw}" height="20" fill="{GREY}"/><rect x="{lw}" width="{mw}" height="20" fill="{colour}"/>'
        f'<g fill="#fff" text-anchor="middle" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{label_x}" y="14">{label}</text><text x="{message_x}" y="14">{message}</text></g></svg>'
    )


def implementation_badge(best_rank: int | None, level: str | None) -> str:
    if best_rank is None:
        return badge_svg("kernelindex", f"unranked · {level or 'no runs'}", GREY)
    return badge_svg("kernelindex", f"#{best_rank} · {level or 'reported'}", COLOURS.get(level or "", GREY))


def chooser_badge(count: int) -> str:
    """What a slug several implementations share shows where a badge of one was embedded."""
    return badge_svg("kernelindex", f"{count} share this slug · choose one", GREY)
