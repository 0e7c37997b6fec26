"""The pure seating rules: labels, the generated grid, best available."""

from __future__ import annotations

from inventory.seating.domain import Seat, best_available, grid, row_letters, seat_label


def test_row_letters_run_like_spreadsheet_columns():
    assert [row_letters(i) for i in (0, 1, 25, 26, 27, 51, 52, 701)] == [
        "A", "B", "Z", "AA", "AB", "AZ", "BA", "ZZ"
    ]  # fmt: skip


def test_grid_labels_rows_and_coordinates():
    seats = grid(rows=2, seats_per_row=3)
    assert [s.label for s in seats] == ["A-1", "A-2", "A-3", "B-1", "B-2", "B-3"]
    assert (seats[4].row, seats[4].number, seats[4].x, seats[4].y) == ("B", 2, 2.0, 2.0)
    assert seat_label(section="Balcony", row="C", number=4) == "Balcony:C-4"


def first(seats, free, n):
    return next(best_available(seats=seats, free=set(free), quantity=n), None)


def test_best_available_takes_the_centre_of_the_row_nearest_the_stage():
    seats = grid(rows=3, seats_per_row=10)
    every = {s.label for s in seats}
    assert first(seats, every, 2) == ["A-5", "A-6"]
    assert first(seats, every, 3) == ["A-4", "A-5", "A-6"]


def test_best_available_keeps_a_block_together_in_a_further_row_before_splitting():
    seats = grid(rows=2, seats_per_row=6)
    # Row A has 3 free seats, none adjacent; row B is free.
    free = {"A-1", "A-3", "A-5"} | {f"B-{n}" for n in range(1, 7)}
    assert first(seats, free, 2) == ["B-3", "B-4"]


def test_best_available_splits_when_no_row_has_a_block():
    seats = grid(rows=2, seats_per_row=5)
    free = {"A-1", "A-3", "B-2", "B-5"}
    assert sorted(first(seats, free, 3)) == ["A-1", "A-3", "B-2"]


def test_best_available_offers_nothing_when_too_few_are_free():
    seats = grid(rows=1, seats_per_row=4)
    assert first(seats, {"A-1"}, 2) is None


def test_every_block_of_the_rows_is_offered_in_order():
    seats = grid(rows=2, seats_per_row=4)
    every = {s.label for s in seats}
    candidates = list(best_available(seats=seats, free=every, quantity=2))
    assert candidates[:3] == [["A-2", "A-3"], ["A-1", "A-2"], ["A-3", "A-4"]]
    assert candidates[3] == ["B-2", "B-3"]


def test_accessible_seats_are_offered_last():
    seats = [
        Seat("A-1", "", "A", 1, 1, 1),
        Seat("A-2", "", "A", 2, 2, 1, accessible=True),
        Seat("A-3", "", "A", 3, 3, 1, accessible=True),
        Seat("B-1", "", "B", 1, 1, 2),
        Seat("B-2", "", "B", 2, 2, 2),
    ]
    every = {s.label for s in seats}
    assert first(seats, every, 2) == ["B-1", "B-2"]
    assert first(seats, {"A-2", "A-3"}, 2) == ["A-2", "A-3"]
