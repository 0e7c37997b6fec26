"""A confirmed claim's follow-up, the confirmation email, is started the one
way follow-up work is (fairqueue/news.py): ``claim_confirmed`` sent after the
transaction commits, the storefront's receiver enqueues the task. Checked on
the real broker: exactly one message after a commit, none after a rollback."""

from __future__ import annotations

import pytest
from django.db import transaction

from claims.services import claim_confirm
from tests.support.broker import published
from tests.support.payments import make_claim

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = "storefront.tasks.confirmation_email_send"


class RolledBack(Exception):
    pass


def test_the_confirmation_email_is_enqueued_once_after_commit():
    claim = make_claim()
    with transaction.atomic():
        claim_confirm(claim_id=claim.pk)
        assert published() == []
    assert published() == [(EMAIL, [str(claim.pk)])]


def test_a_rolled_back_confirmation_enqueues_no_email():
    claim = make_claim()
    with pytest.raises(RolledBack), transaction.atomic():
        claim_confirm(claim_id=claim.pk)
        raise RolledBack
    assert published() == []
