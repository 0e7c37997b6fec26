"""``python manage.py ensure_superuser``: the first admin login, from the
environment (docker compose runs it after migrating).

DJANGO_SUPERUSER_USERNAME (default ``admin``), DJANGO_SUPERUSER_EMAIL and
DJANGO_SUPERUSER_PASSWORD (required), the variables Django's own
``createsuperuser --noinput`` reads. Unlike that command this one is safe to
run on every start: an existing user is left as it is (its password may have
been changed in the admin since). The password must pass the password
validators and is never printed.
"""

from __future__ import annotations

import os

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create the first admin login from DJANGO_SUPERUSER_* variables, once."

    def handle(self, *args, **options):
        username = os.environ.get("DJANGO_SUPERUSER_USERNAME") or "admin"
        email = os.environ.get("DJANGO_SUPERUSER_EMAIL") or ""
        password = os.environ.get("DJANGO_SUPERUSER_PASSWORD") or ""
        users = get_user_model().objects
        if users.filter(username=username).exists():
            self.stdout.write(f"admin login {username!r} exists; left unchanged")
            return
        if not password:
            raise CommandError("DJANGO_SUPERUSER_PASSWORD is not set")
        user = users.model(username=username, email=email, is_staff=True, is_superuser=True)
        try:
            validate_password(password, user=user)
        except ValidationError as exc:
            raise CommandError("DJANGO_SUPERUSER_PASSWORD: " + " ".join(exc.messages)) from exc
        user.set_password(password)
        user.save()
        self.stdout.write(f"admin login {username!r} created")
