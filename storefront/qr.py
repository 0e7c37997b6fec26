"""QR codes of issued tickets (segno: pure Python, no image library)."""

from __future__ import annotations

import functools
import io

import segno

from claims.domain import ticket_code_display


# Encoding a symbol (its mask chosen by scoring all eight) is most of a QR
# code's cost: each process keeps the recent ones, so a ticket's email, its
# page and its image share one encoding, and a retried email none at all.
@functools.lru_cache(maxsize=2048)
def _qr(code: str) -> segno.QRCode:
    # The grouped code (``ABCD-2345-EFGH-6789``) is QR "alphanumeric": a small
    # version-1 symbol that any phone or door scanner reads quickly. Level M
    # survives a scuffed printout or a cracked screen.
    return segno.make(ticket_code_display(code), error="m", micro=False)


def qr_svg(code: str) -> str:
    """Inline ``<svg>`` for a page, sized by its CSS (a viewBox, no fixed
    size): crisp at any size and in print."""
    return _qr(code).svg_inline(
        border=4, omitsize=True, title=f"Ticket {ticket_code_display(code)}", svgclass="qr-svg"
    )


def qr_svg_document(code: str, *, scale: int = 6) -> bytes:
    """A standalone SVG file (``<img src>``, downloads)."""
    out = io.BytesIO()
    _qr(code).save(out, kind="svg", scale=scale, border=4)
    return out.getvalue()


@functools.lru_cache(maxsize=512)
def qr_png(code: str, *, scale: int = 8) -> bytes:
    """PNG for email (mail clients drop inline SVG)."""
    out = io.BytesIO()
    _qr(code).save(out, kind="png", scale=scale, border=4)
    return out.getvalue()
