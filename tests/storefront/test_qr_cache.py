"""A ticket's QR code is encoded once per process: its email (and a retry of
it), its page and its image share the encoding (storefront/qr.py)."""

from __future__ import annotations

import segno

from claims.domain import ticket_code_new
from storefront import qr


def test_a_ticket_code_is_encoded_once_and_its_png_made_once(monkeypatch):
    made: list[str] = []
    real = segno.make

    def counted(content: str, **options: object) -> segno.QRCode:
        made.append(content)
        return real(content, **options)

    monkeypatch.setattr(qr.segno, "make", counted)
    code = ticket_code_new()

    png = qr.qr_png(code)
    again = qr.qr_png(code)
    svg = qr.qr_svg(code)

    assert png == again and png.startswith(b"\x89PNG")
    assert "<svg" in svg
    assert made == [qr.ticket_code_display(code)]  # one encoding for all three
