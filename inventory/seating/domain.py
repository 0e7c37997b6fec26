"""Pure rules of reserved seating (no Django): seat labels, the grid a
generated map uses, and the best-available rule.

Best available, for ``n`` seats of a tier:

1. Rows are ranked nearest the stage first: by the smallest ``y`` of the
   row's seats (the stage is at the top of the drawing, ``y`` grows away
   from it); rows without coordinates come after, by row name (``A`` before
   ``B``, ``Z`` before ``AA``).
2. In the best row that has ``n`` free seats with consecutive numbers, the
   block whose middle is nearest the row's centre (the middle of the row's
   lowest and highest seat number, taken or not) wins; a tie goes to the
   lower numbers.
3. No row has such a block: the best split, the ``n`` free seats that rank
   best one by one (row rank, then distance from the row's centre).

Accessible seats are offered by best available only when nothing else fits
(customers who need them pick them on the map)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum


class SeatStatus(StrEnum):
    AVAILABLE = "available"
    HELD = "held"  # in a CLAIMED claim (payment pending)
    SOLD = "sold"  # in a CONFIRMED claim
    BLOCKED = "blocked"  # house seats, broken seats: never sold


@dataclass(frozen=True)
class SeatChange:
    label: str
    status: SeatStatus


@dataclass(frozen=True)
class Seat:
    label: str
    section: str
    row: str
    number: int
    x: float | None = None
    y: float | None = None
    accessible: bool = False
    restricted_view: bool = False


def row_letters(index: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA (spreadsheet column names)."""
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(ord("A") + rest) + name
    return name


def seat_label(*, section: str, row: str, number: int) -> str:
    """``A-12``; in a named section ``Balcony:A-12``."""
    return f"{section}:{row}-{number}" if section else f"{row}-{number}"


def grid(*, rows: int, seats_per_row: int, section: str = "") -> list[Seat]:
    """Rows A, B, ... of seats numbered from 1; x = number, y = row (1 is
    nearest the stage)."""
    if rows < 1:
        return []
    return grid_rows(
        first=row_letters(0),
        last=row_letters(rows - 1),
        seats_per_row=seats_per_row,
        section=section,
    )


def _row_key(seats: Sequence[Seat]) -> tuple[float, int, str, str]:
    ys = [s.y for s in seats if s.y is not None]
    first = seats[0]
    return (min(ys) if ys else math.inf, len(first.row), first.row, first.section)


def rank_rows(seats: Sequence[Seat]) -> list[list[Seat]]:
    """The rows of a map, nearest the stage first, each in seat-number order."""
    rows: dict[tuple[str, str], list[Seat]] = {}
    for seat in seats:
        rows.setdefault((seat.section, seat.row), []).append(seat)
    return [sorted(row, key=lambda s: s.number) for row in sorted(rows.values(), key=_row_key)]


def best_available(
    *,
    seats: Sequence[Seat],
    free: set[str],
    quantity: int,
    ranked: Sequence[Sequence[Seat]] | None = None,
    split: bool = True,
    accessible: bool = True,
) -> Iterator[list[str]]:
    """Candidate seat sets for ``quantity`` seats, best first (the rule in
    the module's docstring): every adjacent block of every row in rank
    order, then the best split. ``seats`` is the whole map (blocked seats
    left out), ``free`` the labels free now; ``ranked`` its ``rank_rows``
    when the caller keeps them. ``split=False``: adjacent blocks only;
    ``accessible=False``: never accessible seats. Yields nothing when fewer
    than ``quantity`` seats are free."""
    if quantity < 1 or len(free) < quantity:
        return
    rows = rank_rows(seats) if ranked is None else ranked
    for accessible_too in (False, True) if accessible else (False,):
        usable = {
            s.label for s in seats if s.label in free and (accessible_too or not s.accessible)
        }
        if len(usable) < quantity:
            continue
        for row in rows:
            yield from _blocks(row, usable, quantity)
        if not split:
            continue
        singles: list[tuple[int, float, str]] = []
        for rank, row in enumerate(rows):
            centre = _centre(row)
            singles += [(rank, abs(s.number - centre), s.label) for s in row if s.label in usable]
        yield [label for _, _, label in sorted(singles)[:quantity]]
        return


def _centre(row: Sequence[Seat]) -> float:
    numbers = [s.number for s in row]
    return (min(numbers) + max(numbers)) / 2


def _blocks(row: Sequence[Seat], usable: set[str], quantity: int) -> list[list[str]]:
    """The row's blocks of ``quantity`` free seats with consecutive numbers,
    nearest the row's centre first."""
    by_number = sorted(row, key=lambda s: s.number)  # already so when ranked
    centre = _centre(by_number)
    found: list[tuple[float, int, list[str]]] = []
    run: list[Seat] = []
    for seat in by_number:
        if seat.label in usable and (not run or seat.number == run[-1].number + 1):
            run.append(seat)
        else:
            run = [seat] if seat.label in usable else []
        if len(run) >= quantity:
            block = run[-quantity:]
            middle = (block[0].number + block[-1].number) / 2
            found.append((abs(middle - centre), block[0].number, [s.label for s in block]))
    found.sort(key=lambda f: (f[0], f[1]))
    return [labels for _, _, labels in found]


def row_index(name: str) -> int:
    """A -> 0, Z -> 25, AA -> 26 (the inverse of ``row_letters``); ValueError
    for anything but letters."""
    name = name.strip().upper()
    if not name or not name.isascii() or not name.isalpha():
        raise ValueError(f"not a row name: {name!r}")
    index = 0
    for char in name:
        index = index * 26 + (ord(char) - ord("A") + 1)
    return index - 1


def grid_rows(*, first: str, last: str, seats_per_row: int, section: str = "") -> list[Seat]:
    """Rows ``first``..``last`` (e.g. A..T) of ``seats_per_row`` seats
    numbered from 1; x = number, y = the row's place (1 nearest the stage)."""
    start, end = row_index(first), row_index(last)
    if end < start:
        raise ValueError(f"row {last} comes before row {first}")
    return [
        Seat(
            label=seat_label(section=section, row=row_letters(r), number=n),
            section=section,
            row=row_letters(r),
            number=n,
            x=float(n),
            y=float(r - start + 1),
        )
        for r in range(start, end + 1)
        for n in range(1, seats_per_row + 1)
    ]


CSV_FLAGS = {"accessible", "restricted_view"}
# A seat's place on the map, in seat pitches from the origin: room for any
# hall, and every map stays drawable (svg.py scales by the extent).
MAX_COORDINATE = 10_000.0
MAX_SEAT_NUMBER = 99_999
MAX_LABEL = 48  # inventory.models.Ticket.label


def parse_seat_rows(rows: Sequence[Sequence[str]]) -> list[Seat]:
    """Seats from CSV rows ``section,row,number[,x,y,flags]`` (as the csv
    module splits them). ``flags``: ``accessible`` and/or
    ``restricted_view``, separated by ``|`` or spaces. A first row whose
    number column is not a number is a header. Missing x/y: x = the number,
    y = the row's place in the file (1 nearest the stage). ValueError naming
    the line for anything else, a number, x or y out of bounds or a name
    too long to store included."""
    seats: list[Seat] = []
    row_places: dict[tuple[str, str], int] = {}
    for line, fields in enumerate(rows, start=1):
        cells = [c.strip() for c in fields]
        if not any(cells):
            continue
        if line == 1 and len(cells) >= 3 and not cells[2].isdigit():
            continue  # a header
        if len(cells) < 3:
            raise ValueError(f"line {line}: needs section,row,number")
        section, row = cells[0], cells[1]
        if not row or len(row) > 16 or len(section) > 32:
            raise ValueError(f"line {line}: a row (at most 16 characters) is needed")
        try:
            number = int(cells[2])
            x = float(cells[3]) if len(cells) > 3 and cells[3] else None
            y = float(cells[4]) if len(cells) > 4 and cells[4] else None
        except ValueError:
            raise ValueError(f"line {line}: number, x and y must be numbers") from None
        if not 1 <= number <= MAX_SEAT_NUMBER:
            raise ValueError(f"line {line}: seat numbers go from 1 to {MAX_SEAT_NUMBER}")
        if any(v is not None and not math.isfinite(v) for v in (x, y)):
            raise ValueError(f"line {line}: x and y must be finite")
        if any(v is not None and abs(v) > MAX_COORDINATE for v in (x, y)):
            raise ValueError(f"line {line}: x and y go from -{MAX_COORDINATE:,.0f} to "
                             f"{MAX_COORDINATE:,.0f}")  # fmt: skip
        label = seat_label(section=section, row=row, number=number)
        if len(label) > MAX_LABEL:
            raise ValueError(f"line {line}: the seat name {label!r} is over {MAX_LABEL} characters")
        flags = set(cells[5].replace("|", " ").split()) if len(cells) > 5 else set()
        if flags - CSV_FLAGS:
            raise ValueError(f"line {line}: unknown flags {sorted(flags - CSV_FLAGS)}")
        place = row_places.setdefault((section, row), len(row_places) + 1)
        seats.append(
            Seat(
                label=label,
                section=section,
                row=row,
                number=number,
                x=x if x is not None else float(number),
                y=y if y is not None else float(place),
                accessible="accessible" in flags,
                restricted_view="restricted_view" in flags,
            )
        )
    return seats
