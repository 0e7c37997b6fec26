"""Pure rules of a claim on tickets, and of the tickets issued for a paid
claim (no Django)."""

from __future__ import annotations

import re
import secrets
from enum import StrEnum

from fairqueue.states import StateMachine, choices


class ClaimStatus(StrEnum):
    CLAIMED = "CLAIMED"
    CONFIRMED = "CONFIRMED"
    RELEASED = "RELEASED"


# The field's choices (labels included): the model and the OpenAPI enum name
# (SPECTACULAR_SETTINGS' ENUM_NAME_OVERRIDES) use this one list.
CLAIM_STATUS_CHOICES = choices(ClaimStatus)


C = ClaimStatus
CLAIM_MACHINE = StateMachine(
    "claim",
    {
        C.CLAIMED: {C.CONFIRMED, C.RELEASED},
        # A paid claim is released by a refund or by staff (release_sources);
        # its issued tickets are voided in the same transaction.
        C.CONFIRMED: {C.RELEASED},
        # A late payment success for a released claim re-instates it when the
        # tickets are still free (invariant 5).
        C.RELEASED: {C.CONFIRMED},
    },
)

# Claims that hold tickets (invariant 3) and count as the customer's purchase
# for the event (invariant 6).
HOLDING_STATUSES = (C.CLAIMED, C.CONFIRMED)


class ReleaseReason(StrEnum):
    CUSTOMER = "customer"
    EXPIRED = "expired"
    PAYMENT_FAILED = "payment_failed"
    STAFF = "staff"
    REFUNDED = "refunded"


# Who may release a paid (CONFIRMED) claim: only a refund or staff. The
# customer, expiry and a failed payment release an unpaid hold only.
_PAID_RELEASERS = frozenset({ReleaseReason.STAFF, ReleaseReason.REFUNDED})


def release_sources(reason: ReleaseReason | str) -> tuple[ClaimStatus, ...]:
    """The statuses a claim may be released from for ``reason``: the WHERE
    clause of the conditional UPDATE."""
    if ReleaseReason(reason) in _PAID_RELEASERS:
        return (C.CLAIMED, C.CONFIRMED)
    return (C.CLAIMED,)


# --- issued tickets ----------------------------------------------------------
# One per seat of a CONFIRMED claim, with the code the door scans. Not the
# sellable unit (inventory's Ticket rows, reused after a release): an issued
# ticket is never reused, so a voided code still answers "void" at the door.


class IssuedTicketStatus(StrEnum):
    VALID = "VALID"
    # Returned for resale: still its holder's (withdrawable) until someone
    # else has paid for it; the door refuses it meanwhile.
    ON_RESALE = "ON_RESALE"
    USED = "USED"  # checked in at the door
    # Its claim left CONFIRMED (refund, staff release), or it was resold or
    # transferred (``void_reason``: a new ticket with a new code replaced it).
    VOID = "VOID"


ISSUED_TICKET_STATUS_CHOICES = choices(IssuedTicketStatus)

T = IssuedTicketStatus
ISSUED_TICKET_MACHINE = StateMachine(
    "issued_ticket",
    {
        T.VALID: {T.USED, T.VOID, T.ON_RESALE},
        # Withdrawn, resold (a buyer paid), or its claim released.
        T.ON_RESALE: {T.VALID, T.VOID},
        # A refund after the holder went in still cancels the ticket.
        T.USED: {T.VOID},
    },
)


class VoidReason(StrEnum):
    """Why a ticket was voided besides its claim's release reason."""

    RESOLD = "resold"  # returned and bought by someone else: a new code is theirs
    TRANSFERRED = "transferred"  # sent to another person: a new code is theirs


def ticket_public_status(status: str, void_reason: str) -> str:
    """The status a holder reads (``GET me/tickets/``): valid, on_resale,
    used, resold, transferred or void."""
    if status == T.VOID and void_reason in (VoidReason.RESOLD, VoidReason.TRANSFERRED):
        return str(void_reason)
    return str(status).lower()


# --- returns and transfers ------------------------------------------------------


class ReturnStatus(StrEnum):
    ON_RESALE = "ON_RESALE"  # back on sale; the ticket is still its holder's
    WITHDRAWN = "WITHDRAWN"  # taken back by its holder before anyone paid
    RESOLD = "RESOLD"  # someone else paid: the old code void, the holder refunded
    CANCELLED = "CANCELLED"  # the purchase itself was cancelled (refund, staff)


# Why a return ended WITHDRAWN without its holder: it was still on resale
# when the event's returns closed (``TicketReturn.end_reason``).
RETURNS_CLOSED = "returns_closed"


class TransferStatus(StrEnum):
    PENDING = "PENDING"
    ACCEPTED = "ACCEPTED"
    CANCELLED = "CANCELLED"  # by the sender, or the ticket changed meanwhile


class ClaimSource(StrEnum):
    SALE = "sale"  # bought in the sale (paid through a payment)
    TRANSFER = "transfer"  # a ticket sent by its holder: nothing paid


def return_refund_amount(*, paid: int, quantity: int, fee: int) -> int:
    """What the holder of a resold ticket gets back: its face value (its
    share of what the purchase paid) minus the organizer's fee, never below 0."""
    face = paid // max(quantity, 1)
    return max(0, face - max(fee, 0))


def transfers_left(*, allowed: bool, limit: int | None, done: int) -> bool:
    """May a ticket that was transferred ``done`` times be sent on again?"""
    if not allowed:
        return False
    return limit is None or done < limit


# Crockford's base32: no I, L, O or U, so a code read aloud or typed from
# paper is not mistaken. 16 symbols = 80 random bits.
CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
CODE_LENGTH = 16
_LOOKALIKES = str.maketrans({"O": "0", "I": "1", "L": "1"})
_NOT_CODE = re.compile(r"[\s\-]+")


def ticket_code_new() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def ticket_code_display(code: str) -> str:
    """``ABCD2345EFGH6789`` -> ``ABCD-2345-EFGH-6789`` (what the QR holds)."""
    return "-".join(code[i : i + 4] for i in range(0, len(code), 4))


def ticket_code_normalize(text: str) -> str | None:
    """What a door scanner or a person typed, as the stored code: case,
    spaces and dashes ignored, O/I/L read as 0/1. None when it cannot be a code."""
    code = _NOT_CODE.sub("", str(text)).upper().translate(_LOOKALIKES)
    if len(code) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in code):
        return None
    return code
