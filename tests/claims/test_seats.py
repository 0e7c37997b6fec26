"""Reserved seating through the claim service: chosen seats all or nothing,
best available, seats back on release, the Redis counter kept with them."""

from __future__ import annotations

import json

import pytest

from claims.domain import ReleaseReason
from claims.models import Claim, IssuedTicket
from claims.services import (
    claim_confirm,
    claim_create,
    claim_reinstate,
    claim_release,
    claims_expire,
)
from events.models import TierKind
from fairqueue.errors import AppError
from inventory.models import Ticket
from inventory.seating import services as seating_services
from inventory.seating.seatmap import seat_map_json
from inventory.services import inventory_sync_event
from inventory.signals import seats_changed
from tests.support.sales import (
    admit_directly,
    claim_seats,
    counter,
    expire,
    in_flight,
    make_customers,
    on_sale,
    on_sale_reserved,
)

pytestmark = pytest.mark.django_db(transaction=True)


def held_labels(tier) -> list[str]:
    return sorted(
        Ticket.objects.filter(tier=tier, claim__isnull=False).values_list("label", flat=True)
    )


@pytest.fixture
def tier():
    return on_sale_reserved(rows=3, seats_per_row=10, max_tickets_per_customer=4)


@pytest.fixture
def changes():
    got: list[dict] = []

    def receiver(sender, **kwargs):
        got.append(kwargs)

    seats_changed.connect(receiver)
    yield got
    seats_changed.disconnect(receiver)


def test_a_generated_tier_is_reserved_with_one_labelled_row_per_seat(tier):
    assert tier.kind == TierKind.RESERVED
    assert tier.inventory == 30
    assert Ticket.objects.filter(tier=tier).count() == 30
    assert Ticket.objects.filter(tier=tier, label="C-10", row="C", number=10).exists()
    assert counter(tier) == 30


def test_chosen_seats_are_taken_exactly(tier, changes):
    buyer = admit_directly(tier.event, make_customers(1))[0]
    claim = claim_seats(tier, buyer, ["B-4", "B-3"])
    assert sorted(claim.seats) == ["B-3", "B-4"]
    assert claim.quantity == 2
    assert claim.amount == 2 * tier.price
    assert held_labels(tier) == ["B-3", "B-4"]
    assert counter(tier) == 28
    assert in_flight(tier) == []
    assert len(changes) == 1
    assert changes[0]["tier_id"] == tier.id
    assert sorted(c["label"] for c in changes[0]["changes"]) == ["B-3", "B-4"]
    assert {c["status"] for c in changes[0]["changes"]} == {"held"}
    assert isinstance(changes[0]["version"], int)


def test_a_taken_seat_refuses_the_whole_claim_and_names_it(tier):
    first, second = admit_directly(tier.event, make_customers(2))
    claim_seats(tier, first, ["A-5"])
    with pytest.raises(AppError) as caught:
        claim_seats(tier, second, ["A-4", "A-5", "A-6"])
    assert caught.value.status == 409
    assert caught.value.code == "seats_unavailable"
    assert caught.value.details == {"seats": ["A-5"]}
    # Nothing held for the loser, nothing lost from the counter.
    assert held_labels(tier) == ["A-5"]
    assert Claim.objects.filter(customer=second.customer).count() == 0
    assert counter(tier) == 29
    assert in_flight(tier) == []
    # The loser is still admitted and can pick again.
    assert len(claim_seats(tier, second, ["A-4", "A-6"]).seats) == 2


def test_a_blocked_seat_is_unavailable(tier):
    Ticket.objects.filter(tier=tier, label="A-1").update(blocked=True)
    buyer = admit_directly(tier.event, make_customers(1))[0]
    with pytest.raises(AppError) as caught:
        claim_seats(tier, buyer, ["A-1", "A-2"])
    assert (caught.value.code, caught.value.details) == ("seats_unavailable", {"seats": ["A-1"]})
    assert held_labels(tier) == []


def test_an_unknown_seat_is_422_and_nothing_is_held(tier):
    buyer = admit_directly(tier.event, make_customers(1))[0]
    with pytest.raises(AppError) as caught:
        claim_seats(tier, buyer, ["A-1", "Z-99"])
    assert (caught.value.status, caught.value.code) == (422, "seat_not_found")
    assert caught.value.details == {"seats": ["Z-99"]}
    assert held_labels(tier) == []
    assert counter(tier) == 30


def test_seats_on_a_general_tier_are_refused():
    general = on_sale(tickets=5)
    buyer = admit_directly(general.event, make_customers(1))[0]
    with pytest.raises(AppError) as caught:
        claim_seats(general, buyer, ["A-1"])
    assert (caught.value.status, caught.value.code) == (422, "not_reserved_seating")
    assert Claim.objects.count() == 0


def test_more_seats_than_the_limit_are_refused(tier):
    buyer = admit_directly(tier.event, make_customers(1))[0]
    with pytest.raises(AppError) as caught:
        claim_seats(tier, buyer, ["A-1", "A-2", "A-3", "A-4", "A-5"])
    assert caught.value.code == "invalid_quantity"
    assert held_labels(tier) == []


def test_a_quantity_alone_gets_the_best_available_block(tier):
    buyers = admit_directly(tier.event, make_customers(2))
    first = claim_create(
        event_id=tier.event_id,
        customer_id=buyers[0].customer.id,
        admission_token=buyers[0].token,
        tier_id=tier.id,
        quantity=2,
    )
    assert sorted(first.seats) == ["A-5", "A-6"]
    second = claim_create(
        event_id=tier.event_id,
        customer_id=buyers[1].customer.id,
        admission_token=buyers[1].token,
        tier_id=tier.id,
        quantity=3,
    )
    # flank the taken pair: the nearest block of 3 is A-7..A-9
    # or A-2..A-4; both are 3 from the centre, the lower numbers win.
    assert sorted(second.seats) == ["A-2", "A-3", "A-4"]
    assert counter(tier) == 25


def test_released_seats_go_back_on_sale(tier, changes):
    buyer = admit_directly(tier.event, make_customers(1))[0]
    claim = claim_seats(tier, buyer, ["C-1", "C-2"])
    claim_release(claim_id=claim.pk, reason=ReleaseReason.CUSTOMER)
    assert held_labels(tier) == []
    assert counter(tier) == 30
    released = changes[-1]["changes"]
    assert sorted((c["label"], c["status"]) for c in released) == [
        ("C-1", "available"),
        ("C-2", "available"),
    ]
    # The claim remembers its seats.
    assert sorted(Claim.objects.get(pk=claim.pk).seats) == ["C-1", "C-2"]


def test_confirmed_seats_are_sold_and_the_tickets_carry_them(tier, changes, client):
    buyer = admit_directly(tier.event, make_customers(1))[0]
    claim = claim_seats(tier, buyer, ["B-7", "B-6"])
    claim_confirm(claim_id=claim.pk)
    issued = IssuedTicket.objects.filter(claim=claim).order_by("seat")
    assert sorted(t.seat_label for t in issued) == ["B-6", "B-7"]
    assert {c["status"] for c in changes[-1]["changes"]} == {"sold"}
    page = client.get(f"/tickets/{issued[0].code}/")
    assert page.status_code == 200
    assert f"<dt>Seat</dt><dd>{issued[0].seat_label}</dd>" in page.content.decode()


def test_a_late_payment_reinstates_the_same_seats_or_none(tier):
    first, second = admit_directly(tier.event, make_customers(2))
    claim = claim_seats(tier, first, ["A-1", "A-2"])
    claim_release(claim_id=claim.pk, reason=ReleaseReason.EXPIRED)
    assert claim_reinstate(claim_id=claim.pk) is True
    assert held_labels(tier) == ["A-1", "A-2"]
    assert Claim.objects.get(pk=claim.pk).status == "CONFIRMED"
    # Released again, and one of its seats sold to someone else meanwhile.
    claim_release(claim_id=claim.pk, reason=ReleaseReason.STAFF)
    claim_seats(tier, second, ["A-2"])
    assert claim_reinstate(claim_id=claim.pk) is False
    assert held_labels(tier) == ["A-2"]
    assert Claim.objects.get(pk=claim.pk).status == "RELEASED"


def test_seats_are_claimed_and_mapped_from_postgres_while_redis_is_stopped(own_redis):
    tier = on_sale_reserved(rows=1, seats_per_row=4, max_tickets_per_customer=2)
    first, second = admit_directly(tier.event, make_customers(2))
    own_redis.stop()
    assert sorted(claim_seats(tier, first, ["A-1", "A-2"]).seats) == ["A-1", "A-2"]
    with pytest.raises(AppError) as caught:
        claim_seats(tier, second, ["A-2", "A-3"])
    assert (caught.value.code, caught.value.details) == ("seats_unavailable", {"seats": ["A-2"]})
    body = json.loads(
        seat_map_json(event_id=tier.event_id, tier_id=tier.id)
    )
    assert [s["status"] for s in body["seats"]] == ["held", "held", "available", "available"]


def test_expired_seats_go_back_on_sale_and_are_announced(tier, changes):
    buyer = admit_directly(tier.event, make_customers(1))[0]
    claim = claim_seats(tier, buyer, ["A-9", "A-10"])
    expire(claim)
    claims_expire()
    assert held_labels(tier) == []
    assert counter(tier) == 30
    assert sorted(c["label"] for c in changes[-1]["changes"]) == ["A-10", "A-9"]
    assert {c["status"] for c in changes[-1]["changes"]} == {"available"}


@pytest.mark.parametrize("chunk_seats", [1, 4, 1000])
def test_best_available_reads_rows_a_few_at_a_time_and_splits_last(
    monkeypatch, chunk_seats, changes
):
    monkeypatch.setattr(seating_services, "CHUNK_SEATS", chunk_seats)
    tier = on_sale_reserved(rows=3, seats_per_row=4, max_tickets_per_customer=3)
    # Row A: free (no pair); row B full; row C: C-3, C-4 free.
    taken = ["A-2", "A-4", "B-1", "B-2", "B-3", "B-4", "C-1", "C-2"]
    Ticket.objects.filter(tier=tier, label__in=taken).update(blocked=True)
    inventory_sync_event(event_id=tier.event_id)
    buyers = admit_directly(tier.event, make_customers(2))

    def best(admitted, quantity):
        return claim_create(
            event_id=tier.event_id,
            customer_id=admitted.customer.id,
            admission_token=admitted.token,
            tier_id=tier.id,
            quantity=quantity,
        )

    assert sorted(best(buyers[0], 2).seats) == ["C-3", "C-4"]
    # Now no row has two free seats side by side: the best split.
    assert sorted(best(buyers[1], 2).seats) == ["A-1", "A-3"]
