"""The organizer's event page: every amount (tier prices, the return fee)
typed and shown in the currency's major unit with the currency beside it,
errors in words, and the organizer preset for a user who has exactly one."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from events.models import Event, TicketTier
from tests.support.admin import ADD_URL, change_url, event_of, event_post
from tests.support.factories import OrganizerFactory

pytestmark = pytest.mark.django_db


def test_a_price_typed_in_naira_is_stored_in_kobo_and_shown_to_customers_in_naira(org_a):
    client_a, _, organizer_a = org_a

    response = client_a.post(ADD_URL, event_post(organizer_a, new_tiers=[("Regular", "15000", 5)]))

    assert response.status_code == 302
    tier = TicketTier.objects.get()
    assert tier.price == 1_500_000
    page = client_a.get(change_url(tier.event))
    [inline] = page.context["inline_admin_formsets"]
    assert inline.formset.forms[0]["price"].value() == 15000
    assert 'value="15000.00"' in page.content.decode()


@pytest.mark.parametrize("typed", ["150.001", "-1", "0", "abc"])
def test_a_price_that_is_not_an_amount_is_a_form_error_and_nothing_is_created(org_a, typed):
    client_a, _, organizer_a = org_a

    response = client_a.post(ADD_URL, event_post(organizer_a, new_tiers=[("Regular", typed, 5)]))

    assert response.status_code == 200
    [inline] = response.context["inline_admin_formsets"]
    assert "price" in inline.formset.forms[0].errors
    assert Event.objects.count() == 0
    assert TicketTier.objects.count() == 0


def test_a_zero_decimal_currency_takes_whole_units_only(org_a):
    client_a, _, organizer_a = org_a
    data = event_post(organizer_a, new_tiers=[("Regular", "1500.50", 5)])
    data["currency"] = "XOF"

    refused = client_a.post(ADD_URL, data)
    data["tiers-0-price"] = "1500"
    accepted = client_a.post(ADD_URL, data)

    assert refused.status_code == 200
    [inline] = refused.context["inline_admin_formsets"]
    assert "no minor unit" in str(inline.formset.forms[0].errors["price"])
    assert accepted.status_code == 302
    assert TicketTier.objects.get().price == 1500


def test_once_on_sale_the_saved_currency_reads_the_price_not_a_posted_one(org_a):
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, status="ACTIVE")
    tier = event.tiers.get()
    data = event_post(organizer_a, event=event, tiers=[(tier, ("Regular", "6000", 10))])
    data["currency"] = "XOF"  # read-only on a live event: ignored

    assert client_a.post(change_url(event), data).status_code == 302

    tier.refresh_from_db()
    assert tier.price == 600_000
    assert Event.objects.get(pk=event.pk).currency == "NGN"


def test_a_user_with_one_organizer_gets_it_preset(org_a):
    client_a, _, organizer_a = org_a

    form = client_a.get(ADD_URL).context["adminform"].form

    assert form.initial["organizer"] == organizer_a.pk
    assert f'<option value="{organizer_a.pk}" selected>' in str(form["organizer"])


def test_a_user_with_two_organizers_chooses(org_a):
    client_a, user, _ = org_a
    OrganizerFactory().members.add(user)

    form = client_a.get(ADD_URL).context["adminform"].form

    assert "organizer" not in form.initial
    assert "selected>" not in str(form["organizer"]).replace('value="" selected>', "")


def test_a_superuser_is_not_preset_to_anyone(superuser_client, org_a):
    form = superuser_client.get(ADD_URL).context["adminform"].form

    assert "organizer" not in form.initial


def test_the_return_fee_is_typed_in_naira_like_the_prices_with_the_currency_beside_it(org_a):
    client_a, _, organizer_a = org_a
    data = event_post(organizer_a, new_tiers=[("Regular", "15000", 5)])
    data["return_fee"] = "500"

    response = client_a.post(ADD_URL, data)

    assert response.status_code == 302
    event = Event.objects.get()
    assert event.return_fee == 50_000  # NGN 500.00, in kobo
    page = client_a.get(change_url(event)).content.decode()
    assert 'name="return_fee" value="500.00"' in page
    # Every amount typed has its currency beside it.
    for name in ("return_fee", "tiers-0-price"):
        assert re.search(rf'name="{name}"[^>]*> <span class="fq-currency">NGN</span>', page)


@pytest.mark.parametrize("typed", ["-1", "5.001", "abc"])
def test_a_return_fee_that_is_not_an_amount_is_a_form_error(org_a, typed):
    client_a, _, organizer_a = org_a
    data = event_post(organizer_a, new_tiers=[("Regular", "15000", 5)])
    data["return_fee"] = typed

    response = client_a.post(ADD_URL, data)

    assert response.status_code == 200
    assert "return_fee" in response.context["adminform"].form.errors
    assert Event.objects.count() == 0


def test_errors_say_what_is_wrong_never_a_constraints_name(org_a):
    client_a, _, organizer_a = org_a
    data = event_post(organizer_a, new_tiers=[("Regular", "15000", 5)])
    data["max_tickets_per_customer"] = 0

    response = client_a.post(ADD_URL, data)

    page = response.content.decode()
    assert response.status_code == 200
    assert "event_max_per_customer" not in page and "Constraint" not in page
    assert response.context["adminform"].form.errors["max_tickets_per_customer"] == [
        "A customer must be able to buy at least 1 ticket."
    ]
    assert Event.objects.count() == 0


def test_a_sale_that_opens_after_the_show_is_refused_with_the_reason(org_a):
    client_a, _, organizer_a = org_a
    data = event_post(organizer_a, new_tiers=[("Regular", "15000", 5)])
    show = timezone.localtime(timezone.now() + timedelta(hours=12)).replace(microsecond=0)
    data.update(starts_at_0=show.strftime("%Y-%m-%d"), starts_at_1=show.strftime("%H:%M:%S"))

    response = client_a.post(ADD_URL, data)  # the sale opens in a day

    assert response.status_code == 200
    (error,) = response.context["adminform"].form.errors["sale_start"]
    assert error.startswith(f"The sale opens after the show starts ({show:%-d %b %Y %H:%M})")
    assert Event.objects.count() == 0
