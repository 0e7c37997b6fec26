"""QR codes of issued tickets (segno: pure Python, no image library)."""

from __future__ import annotations

import functools
import io
import struct
import zlib

import segno

from claims.domain import ticket_code_display

# The data mask every ticket's symbol uses (segno's ``mask``). Left to
# choose, segno scores all eight masks per symbol, four fifths of encoding
# one; any mask is a valid symbol that every reader decodes (the test reads
# the email's image with a real decoder), the scoring only avoids patterns
# that are harder to read. Over ticket codes, mask 0 (a checkerboard) scores
# lowest on average and at worst (ISO/IEC 18004's penalty, a few percent
# above the best mask of each code).
MASK = 0


# Each process keeps the recent symbols, so a ticket's email, its page and
# its image share one encoding, and a retried email none at all.
@functools.lru_cache(maxsize=2048)
def _qr(code: str) -> segno.QRCode:
    # The grouped code (``ABCD-2345-EFGH-6789``) is QR "alphanumeric": a small
    # version-1 symbol that any phone or door scanner reads quickly. Level M
    # survives a scuffed printout or a cracked screen.
    return segno.make(ticket_code_display(code), error="m", micro=False, mask=MASK)


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
    return _png(_qr(code), scale=scale, border=4)


def _png(symbol: segno.QRCode, *, scale: int, border: int) -> bytes:
    """The symbol as the 1-bit greyscale PNG segno's writer makes, pixel for
    pixel, in a fifth of its time (it packs each pixel row byte by byte in
    Python; here a row is one integer): each module row is written once and
    repeated ``scale - 1`` times by PNG's "Up" filter (the row above again).
    Written here because no library fits better: segno's own writer is the
    slow part, and an image library (Pillow) would add a C imaging stack to
    the worker for one 1-bit image that PNG's format makes a few lines."""
    modules = len(symbol.matrix[0]) + 2 * border
    stride = (modules * scale + 7) // 8
    again = (b"\x02" + bytes(stride)) * (scale - 1)
    dark, light = "0" * scale, "1" * scale  # greyscale: 0 is black

    def row(cells: list[int]) -> bytes:
        bits = "".join(dark if cell else light for cell in cells).ljust(stride * 8, "1")
        return b"\x00" + int(bits, 2).to_bytes(stride, "big") + again

    margin = [0] * border
    quiet = row([0] * modules) * border
    image = b"".join([quiet, *(row([*margin, *cells, *margin]) for cells in symbol.matrix), quiet])
    size = modules * scale
    return b"".join(
        [
            b"\x89PNG\r\n\x1a\n",
            _chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 1, 0, 0, 0, 0)),
            _chunk(b"IDAT", zlib.compress(image, 9)),
            _chunk(b"IEND", b""),
        ]
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
