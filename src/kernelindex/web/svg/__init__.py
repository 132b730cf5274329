"""Charts and badges drawn on the server as SVG (escaped text, no script, no inline styles)."""
