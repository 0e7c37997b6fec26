from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from customers.models import Customer
from customers.revocation import auth_state_warm
from customers.tokens import customer_token_issue


class Command(BaseCommand):
    help = (
        "Create N customers in bulk and write 'customer_id token' per line (load tests). "
        "Like signing in, it leaves each customer's sign-out state cached in Redis."
    )

    def add_arguments(self, parser):
        parser.add_argument("--count", type=int, required=True)
        parser.add_argument("--output", required=True)
        parser.add_argument("--email-prefix", default="loadtest")

    def handle(self, *args, count, output, email_prefix, **options):
        if count < 1:
            raise CommandError("--count must be at least 1")
        # One mailbox each: ``prefix+N@`` would be one customer (customers/emails.py).
        emails = [f"{email_prefix}-{i}@example.test" for i in range(count)]
        Customer.objects.bulk_create(
            [Customer(email=e) for e in emails], batch_size=5000, ignore_conflicts=True
        )
        rows = Customer.objects.filter(email__in=emails).values_list("email", "id", "token_version")
        customers = {email: (customer_id, version) for email, customer_id, version in rows}
        with Path(output).open("w") as fh:
            for email in emails:
                customer_id, version = customers[email]
                token, _ = customer_token_issue(
                    customer_id=customer_id, email=email, version=version
                )
                fh.write(f"{customer_id} {token}\n")
                auth_state_warm(customer_id=customer_id)
        self.stdout.write(f"wrote {count} tokens to {output}")
