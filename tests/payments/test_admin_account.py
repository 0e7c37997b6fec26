"""The payment page shows its purchase's account; the refund page says what
a refund does before staff act; no staff action on a payment, in any
status, answers with an error page.

Purchases are built through the real services, API and sandbox gateway
(refunds settled by hand): a buyer of four tickets whose second was
returned and resold (its refund paid back), whose third was sent to a
friend and whose fourth is on resale now."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from html.parser import HTMLParser

import pytest
from django.db import IntegrityError

import events.selectors
from claims.models import IssuedTicket, TicketReturn
from claims.services import issued_ticket_check_in
from events.selectors import tier_snapshot_forget
from payments.models import Payment, Refund
from payments.services import (
    payment_fail_and_release,
    payment_mark_refunded,
    payment_open,
    payment_refund,
)
from tests.claims.resale_support import Buyer, admitted, buy, resale_event, return_ticket
from tests.support.factories import CustomerFactory, UserFactory, bearer
from tests.support.payments import (
    make_claim,
    payment_row,
    pending_payment,
    post_webhook,
    reload,
)

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/payments/payment/"
ACTIONS = ["verify_with_gateway", "fail_and_release", "refund", "mark_refunded",
           "keep_tickets", "retry_resale_refund"]  # fmt: skip
STATUSES = ["INITIALIZING", "PENDING", "CONFIRMED", "FAILED", "REFUND_REQUIRED",
            "REFUND_PENDING", "REFUNDED", "REFUND_FAILED"]  # fmt: skip
# The statuses each action acts on; every other one is refused with a reason.
DONE = {
    "verify_with_gateway": set(STATUSES),
    "fail_and_release": {"INITIALIZING", "PENDING"},
    "refund": {"CONFIRMED", "REFUND_REQUIRED", "REFUND_FAILED"},
    "mark_refunded": {"REFUND_REQUIRED", "REFUND_FAILED"},
    "keep_tickets": set(),
    "retry_resale_refund": set(),
}


@pytest.fixture(autouse=True)
def _fresh_tier_cache(monkeypatch):
    """Returns and resales change a tier between claims: read it at once."""
    monkeypatch.setattr(events.selectors, "TIER_CACHE_SECONDS", 0)
    tier_snapshot_forget()
    yield
    tier_snapshot_forget()


@pytest.fixture
def gateway(sandbox):
    """Webhooks delivered by the test, refunds settled by hand."""
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    return sandbox


@pytest.fixture
def staff(client):
    client.force_login(UserFactory(username="ada", is_superuser=True))
    return client


# --- reading pages ----------------------------------------------------------------


class _Tables(HTMLParser):
    """The text of each cell of each row of the tables with a given class."""

    def __init__(self, css_class: str) -> None:
        super().__init__()
        self.css_class, self.depth, self.rows = css_class, 0, []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and self.css_class in (dict(attrs).get("class") or "").split():
            self.depth += 1
        elif self.depth and tag == "tr":
            self.rows.append([])
        elif self.depth and tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "table" and self.depth:
            self.depth -= 1
        elif self.depth and tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def table_rows(html: str, css_class: str) -> list[list[str]]:
    parser = _Tables(css_class)
    parser.feed(html)
    return parser.rows


def text_of(html: str) -> str:
    """The page's words, tags dropped and spaces collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def refund_action(client, payment: Payment, **form: str):
    """The refund action on one payment: its page, or (``form`` given) the
    form applied and the page it leads to."""
    data = {"action": "refund", "_selected_action": [str(payment.pk)], **form}
    return client.post(CHANGELIST, data, follow=bool(form))


# --- a purchase whose tickets moved ----------------------------------------------


@dataclass
class Moved:
    seller: Buyer
    resold: TicketReturn
    on_resale: TicketReturn
    kept: IssuedTicket


def moved_purchase(api, client, gateway, on_commit, *, settle: bool = True) -> Moved:
    tier = resale_event(tickets=4, max_tickets_per_customer=4)
    seller_in, second_in = admitted(tier.event, 2)
    seller = buy(api, client, gateway, on_commit, tier, seller_in, quantity=4)
    kept, returned, sent, later = seller.tickets()
    assert return_ticket(api, seller, returned, on_commit).status_code == 202
    buy(api, client, gateway, on_commit, tier, second_in)  # takes the returned ticket
    resold = TicketReturn.objects.get(ticket=returned)
    assert resold.status == "RESOLD" and resold.refund_id is not None
    if settle:
        (refund,) = gateway.refunds_of(seller.payment.reference)
        gateway.settle_refund(refund["id"], "processed")
        with on_commit(execute=True):
            assert post_webhook(client, *gateway.refund_webhook(refund["id"])).status_code == 200
    friend = CustomerFactory(email="friend@example.test")
    with on_commit(execute=True):
        offer = api.post(
            f"/api/v1/tickets/{sent.code}/transfer/",
            {"email": friend.email},
            format="json",
            **bearer(seller.customer),
        )
    assert offer.status_code == 201, offer.content
    with on_commit(execute=True):
        taken = api.post(
            f"/api/v1/transfers/{offer.json()['transfer_id']}/accept/", **bearer(friend)
        )
    assert taken.status_code == 200, taken.content
    assert return_ticket(api, seller, later, on_commit).status_code == 202
    on_resale = TicketReturn.objects.get(ticket=later, status="ON_RESALE")
    return Moved(seller, resold, on_resale, kept)


def test_the_payment_page_shows_the_purchase_account(
    api, client, staff, gateway, django_capture_on_commit_callbacks, eager_tasks
):
    moved = moved_purchase(api, client, gateway, django_capture_on_commit_callbacks)
    payment = reload(moved.seller.payment)

    page = staff.get(f"{CHANGELIST}{payment.pk}/change/")

    assert page.status_code == 200
    html = page.content.decode()
    assert table_rows(html, "fq-account-summary") == [
        ["Paid", "NGN 20,000.00"],
        ["Refunded", "NGN 4,500.00"],
        ["Kept as a fee", "NGN 500.00"],
        ["Held for the tickets it holds", "NGN 10,000.00"],
        ["Kept for tickets sent on", "NGN 5,000.00"],
        ["Tickets held", "2"],
    ]
    lines = [row[1:5] for row in table_rows(html, "fq-account-lines")[1:]]
    resale_note = f"ticket resold (return {moved.resold.pk})"
    assert [row[:3] for row in lines] == [
        ["Paid", "NGN 20,000.00", "+4"],
        ["Ticket returned for resale", "—", ""],
        ["Ticket resold", "NGN 4,500.00", "-1"],
        ["Kept as a fee", "NGN 500.00", ""],
        ["Refund asked for", "NGN 4,500.00", ""],
        ["Refund paid back", "NGN 4,500.00", ""],
        ["Ticket sent on", "NGN 5,000.00", "-1"],
        ["Ticket returned for resale", "—", ""],
    ]
    assert lines[4][3] == resale_note
    assert all(
        len(row) == 6 and row[0] and row[5] for row in table_rows(html, "fq-account-lines")[1:]
    )


def test_the_account_escapes_what_staff_typed(staff, sandbox):
    payment = payment_row(reference="fq-escaped", amount=500_000, status="REFUND_REQUIRED")
    payment_mark_refunded(
        payment_id=payment.pk, actor="staff:<b>eve</b>", note="<script>alert(1)</script>"
    )

    html = staff.get(f"{CHANGELIST}{payment.pk}/change/").content.decode()

    assert "<script>alert(1)</script>" not in html and "<b>eve</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    (_, refunded) = table_rows(html, "fq-account-lines")[1:]
    assert refunded[1:] == ["Refunded outside FairQueue", "NGN 5,000.00", "",
                            "<script>alert(1)</script>", "staff:<b>eve</b>"]  # fmt: skip


def test_a_payment_with_no_money_moved_says_so(api, staff, sandbox):
    payment = pending_payment(api)
    html = staff.get(f"{CHANGELIST}{payment.pk}/change/").content.decode()
    assert "No money has moved for this purchase yet. Tickets held: 0." in text_of(html)
    assert table_rows(html, "fq-account-lines") == []


def test_the_refund_page_says_what_happens_to_each_ticket_before_staff_act(
    api, client, staff, gateway, django_capture_on_commit_callbacks, eager_tasks
):
    moved = moved_purchase(api, client, gateway, django_capture_on_commit_callbacks)
    payment = reload(moved.seller.payment)
    issued_ticket_check_in(event_id=payment.claim.event_id, code=moved.kept.code, actor="door")
    refunds, calls = Refund.objects.count(), gateway.stats()["refund_calls"]

    form = refund_action(staff, payment)

    assert form.status_code == 200
    words = text_of(form.content.decode())
    assert "Refunds NGN 10,000.00 (all that is left" in words
    assert (
        "1 ticket sent on to someone else: its holder keeps a valid ticket; not refunded." in words
    )
    assert (
        "1 ticket resold: its own refund to the buyer (NGN 4,500.00: face value minus the "
        "NGN 500.00 fee) is not part of this refund." in words
    )
    assert "1 ticket on resale now: its resale ends when the order is cancelled." in words
    assert "Already at the door: 1 ticket below was checked in." in words  # kept as it was
    assert 'value="Refund, although checked in"' in form.content.decode()
    assert (Refund.objects.count(), gateway.stats()["refund_calls"]) == (refunds, calls)

    with django_capture_on_commit_callbacks(execute=True):
        done = refund_action(staff, payment, apply="1", reason="the show moved")

    # What the page said is what happened.
    assert messages_of(done) == [
        f"Refunds asked for: {payment.reference} (NGN 10,000.00, pending)."
    ]
    refund = Refund.objects.get(payment=payment, for_resale=False)
    assert (refund.amount, Refund.objects.count()) == (1_000_000, refunds + 1)
    assert reload(moved.on_resale).status == "CANCELLED"
    assert reload(moved.resold).status == "RESOLD"


def test_the_refund_page_says_why_a_payment_cannot_be_refunded(api, staff, sandbox):
    payment = pending_payment(api)
    form = refund_action(staff, payment)
    words = text_of(form.content.decode())
    assert "Not refunded now: this payment is PENDING: it cannot be refunded." in words
    assert "Refunds NGN" not in words


# --- no staff action answers with an error page --------------------------------------


def confirmed(api, client, gateway, **pay) -> Payment:
    payment = pending_payment(api)
    gateway.pay(payment.reference, send_webhook=False, **pay)
    assert post_webhook(client, *gateway.webhook(payment.reference)).status_code == 200
    return reload(payment)


def refunded(api, client, gateway, outcome: str | None) -> Payment:
    """A confirmed payment refunded through the gateway; ``outcome``: how
    the gateway settles it (None: not yet)."""
    payment = confirmed(api, client, gateway)
    payment_refund(payment_id=payment.pk, actor="staff:test", reason="test")
    if outcome:
        (sent,) = gateway.refunds_of(payment.reference)
        gateway.settle_refund(sent["id"], outcome)
        assert post_webhook(client, *gateway.refund_webhook(sent["id"])).status_code == 200
    return reload(payment)


def payment_in(status: str, api, client, gateway) -> Payment:
    if status == "INITIALIZING":
        claim = make_claim()
        payment = payment_open(claim_id=claim.pk, customer_id=claim.customer_id).payment
    elif status == "PENDING":
        payment = pending_payment(api)
    elif status == "FAILED":
        payment = pending_payment(api)
        payment_fail_and_release(payment_id=payment.pk, actor="staff:test")
    elif status == "CONFIRMED":
        payment = confirmed(api, client, gateway)
    elif status == "REFUND_REQUIRED":  # money of the wrong amount, automatic refunds off
        payment = confirmed(api, client, gateway, amount=100)
    else:
        outcome = {"REFUND_PENDING": None, "REFUNDED": "processed", "REFUND_FAILED": "failed"}
        payment = refunded(api, client, gateway, outcome[status])
    payment = reload(payment)
    assert payment.status == status
    return payment


@pytest.mark.parametrize("action", ACTIONS)
def test_every_action_on_a_payment_in_any_status_answers_with_a_message(
    action, api, client, staff, gateway, settings, django_capture_on_commit_callbacks
):
    settings.PAYSTACK_AUTO_REFUND = False
    payments = [payment_in(status, api, client, gateway) for status in STATUSES]

    done, refused = set(), set()
    for payment in payments:
        data = {"action": action, "_selected_action": [str(payment.pk)]}
        if action == "refund":
            data.update(apply="1", reason="staff check")
        if action == "fail_and_release":
            data.update(apply="1")
        with django_capture_on_commit_callbacks(execute=True):
            response = staff.post(CHANGELIST, data)
        assert response.status_code == 302, (payment.status, response.status_code)
        page = staff.get(response.url)
        assert page.status_code == 200
        (said,) = page.context["messages"]
        if said.level_tag == "success":
            done.add(payment.status)
        else:  # a refusal names the payment and says why
            assert said.level_tag == "warning", str(said)
            assert str(said).startswith(f"{payment.reference}: "), str(said)
            refused.add(payment.status)

    assert done == DONE[action]
    assert refused == set(STATUSES) - DONE[action]


def test_a_refund_while_a_resale_refund_is_open_waits_and_writes_nothing(
    api, client, staff, gateway, django_capture_on_commit_callbacks, eager_tasks
):
    moved = moved_purchase(api, client, gateway, django_capture_on_commit_callbacks, settle=False)
    payment = reload(moved.seller.payment)
    assert payment.status == "CONFIRMED"
    assert Refund.objects.get(pk=moved.resold.refund_id).status == "PENDING"
    refunds, calls = Refund.objects.count(), gateway.stats()["refund_calls"]
    entries, logged = payment.claim.account.count(), payment.events.count()

    form = refund_action(staff, payment)
    assert "this one waits until it settles" in text_of(form.content.decode())
    response = refund_action(staff, payment, apply="1", reason="the show moved")

    assert response.status_code == 200
    (said,) = response.context["messages"]
    assert said.level_tag == "warning"
    assert str(said) == (
        f"{payment.reference}: A refund of this payment is still with the gateway: "
        "try again once it has settled."
    )
    assert (Refund.objects.count(), gateway.stats()["refund_calls"]) == (refunds, calls)
    assert (payment.claim.account.count(), payment.events.count()) == (entries, logged)
    assert reload(payment).status == "CONFIRMED"
    assert reload(moved.on_resale).status == "ON_RESALE"


@pytest.mark.parametrize(
    ("action", "service"),
    [
        ("fail_and_release", "payment_fail_and_release"),
        ("retry_resale_refund", "resale_refund_retry"),
        ("refund", "payment_refund_by_staff"),
    ],
)
def test_a_race_lost_to_the_database_is_a_message_and_a_log_line(
    action, service, staff, monkeypatch, caplog
):
    payment = payment_row(reference=f"fq-race-{action}", amount=500_000, status="CONFIRMED")

    def lost(**_):
        raise IntegrityError('duplicate key value violates unique constraint "x"')

    monkeypatch.setattr(f"payments.admin.{service}", lost)
    data = {"action": action, "_selected_action": [str(payment.pk)]}
    if action == "refund":
        data.update(apply="1", reason="sorry")
    if action == "fail_and_release":
        data.update(apply="1")
    with caplog.at_level(logging.ERROR, logger="payments.admin"):
        response = staff.post(CHANGELIST, data, follow=True)

    assert response.status_code == 200
    assert messages_of(response) == [
        f"{payment.reference}: the payment changed meanwhile: look again."
    ]
    (logged,) = [r for r in caplog.records if r.name == "payments.admin"]
    assert payment.reference in logged.getMessage() and logged.exc_info is not None
    assert reload(payment).status == "CONFIRMED"


def test_a_verify_the_gateway_did_not_answer_says_so(staff, monkeypatch):
    payment = payment_row(reference="fq-verify-down", amount=500_000)
    monkeypatch.setattr("payments.admin.payment_verify_now", lambda **_: "gateway_unavailable")

    response = staff.post(
        CHANGELIST,
        {"action": "verify_with_gateway", "_selected_action": [str(payment.pk)]},
        follow=True,
    )

    assert messages_of(response) == [
        f"{payment.reference}: the gateway did not answer: try again in a few minutes."
    ]
