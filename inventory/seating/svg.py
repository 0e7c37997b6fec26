"""The seat map drawn for organizers: a server-rendered SVG, one circle per
seat coloured by status (no script needed to see it)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from django.utils.html import escape

PITCH = 14  # pixels between seats one unit apart
RADIUS = 5
MARGIN = 24
STAGE = 28

STYLE = (
    ".seat{stroke:#222;stroke-width:.5}"
    ".available{fill:#2e7d32}.held{fill:#f9a825}.sold{fill:#c62828}"
    ".blocked{fill:#9e9e9e;stroke-dasharray:1 1}"
    ".stage{fill:#37474f}.stage-text{fill:#fff;font:12px sans-serif}"
)


def seat_map_svg(seats: Sequence[dict[str, Any]]) -> str:
    """An SVG of the seats (``inventory.seating.selectors.tier_seat_statuses``): x to
    the right, y away from the stage, drawn at the top."""
    placed = [
        (s, float(s["x"] if s["x"] is not None else s["number"] or 0), float(s["y"] or 0))
        for s in seats
    ]
    if not placed:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40" role="img" aria-label="No seats"></svg>'  # noqa: E501
    min_x = min(x for _, x, _ in placed)
    min_y = min(y for _, _, y in placed)
    width = int((max(x for _, x, _ in placed) - min_x) * PITCH + 2 * MARGIN)
    height = int((max(y for _, _, y in placed) - min_y) * PITCH + 2 * MARGIN + STAGE)
    counts = Counter(s["status"] for s in seats)
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="fq-seatmap" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Seat map: {escape(summary)}">',
        f"<style>{STYLE}</style>",
        f'<rect class="stage" x="{MARGIN}" y="4" width="{max(width - 2 * MARGIN, 10)}" '
        f'height="{STAGE - 10}" rx="3"/>',
        f'<text class="stage-text" x="{width // 2}" y="17" text-anchor="middle">STAGE</text>',
    ]
    for seat, x, y in placed:
        cx = round((x - min_x) * PITCH + MARGIN, 1)
        cy = round((y - min_y) * PITCH + MARGIN + STAGE, 1)
        label = escape(seat["label"])
        parts.append(
            f'<circle class="seat {seat["status"]}" cx="{cx}" cy="{cy}" r="{RADIUS}">'
            f"<title>{label}: {seat['status']}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)
