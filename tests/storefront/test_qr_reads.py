"""The tickets' QR codes read back: every symbol uses one fixed data mask
(storefront/qr.py: segno does not score all eight per ticket), the email's
image of random ticket codes decodes to each code, at the email's size and
at a quarter of it, with a real decoder (zxing-cpp), and it is the PNG
segno's own writer makes, pixel for pixel."""

from __future__ import annotations

import io

import pytest
import zxingcpp
from PIL import Image

from claims.domain import ticket_code_display, ticket_code_new
from storefront import qr


def read(png: bytes) -> list[str]:
    return [found.text for found in zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))]


def test_every_ticket_symbol_uses_the_fixed_mask():
    codes = [ticket_code_new() for _ in range(40)]
    assert {qr._qr(code).mask for code in codes} == {qr.MASK}


@pytest.mark.parametrize("scale", [8, 2])
def test_the_email_image_reads_as_the_ticket_code(scale):
    codes = [ticket_code_new() for _ in range(150)]
    unread = [
        code for code in codes if read(qr.qr_png(code, scale=scale)) != [ticket_code_display(code)]
    ]
    assert unread == []


@pytest.mark.parametrize("scale", [8, 3, 1])
def test_the_email_image_is_the_png_segno_writes_pixel_for_pixel(scale):
    for code in [ticket_code_new() for _ in range(30)]:
        ours = Image.open(io.BytesIO(qr.qr_png(code, scale=scale)))
        theirs = io.BytesIO()
        qr._qr(code).save(theirs, kind="png", scale=scale, border=4)
        segnos = Image.open(theirs)
        assert (ours.mode, ours.size) == (segnos.mode, segnos.size)
        assert ours.tobytes() == segnos.tobytes()
