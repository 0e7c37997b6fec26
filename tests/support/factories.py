"""factory-boy factories. Events and tiers go through the services, so the
ticket rows (invariant 1) exist exactly as in production."""

from datetime import timedelta

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from customers.models import Customer
from customers.tokens import customer_token_issue
from events.models import Event, Organizer, TicketTier
from events.services import tier_provision_tickets


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.test")
    is_staff = True
    password = factory.django.Password("pw")


class OrganizerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organizer

    name = factory.Sequence(lambda n: f"Organizer {n}")


class CustomerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Customer

    email = factory.Sequence(lambda n: f"customer{n}@example.test")


class EventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Event

    organizer = factory.SubFactory(OrganizerFactory)
    name = factory.Sequence(lambda n: f"Concert {n}")
    slug = factory.Sequence(lambda n: f"concert-{n}")
    sale_start = factory.LazyFunction(lambda: timezone.now() - timedelta(minutes=1))
    sale_end = factory.LazyFunction(lambda: timezone.now() + timedelta(days=1))
    status = "ACTIVE"


class TierFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TicketTier
        skip_postgeneration_save = True

    event = factory.SubFactory(EventFactory)
    name = factory.Sequence(lambda n: f"Tier {n}")
    price = 500_000
    inventory = 10

    @factory.post_generation
    def tickets(obj, create, extracted, **kwargs):
        if create:
            tier_provision_tickets(tier=obj)


def bearer(customer: Customer) -> dict[str, str]:
    token, _ = customer_token_issue(customer_id=customer.id, email=customer.email)
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}
