"""What docker compose and nginx ship: no secret with a default, the sandbox
only in the demo profile on the loopback with its control token, the first
admin from the environment, no ticket in nginx's access log; and the command
that makes that admin. (Read as files: no Docker daemon here.)"""

from __future__ import annotations

import re
import tomllib
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

REPO = Path(__file__).resolve().parents[2]
COMPOSE = (REPO / "docker-compose.yml").read_text()
SERVICES = yaml.safe_load(COMPOSE)["services"]
VARIABLE = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?P<op>:?[-?])?(?P<arg>[^}]*)\}")

SECRETS = {
    "METRICS_TOKEN",
    "GRAFANA_ADMIN_PASSWORD",
    "POSTGRES_PASSWORD",
    "DJANGO_SECRET_KEY",
    "TOKEN_SIGNING_KEY",
    "PAYSTACK_SECRET_KEY",
    "EMAIL_URL",
    "DJANGO_SUPERUSER_PASSWORD",
}


def references() -> list[tuple[str, str | None, str]]:
    """Every ``${...}`` outside comments: (name, operator, argument)."""
    code = "\n".join(
        line.split(" #")[0] for line in COMPOSE.splitlines() if not line.lstrip().startswith("#")
    )
    return [(m["name"], m["op"], m["arg"]) for m in VARIABLE.finditer(code)]


def test_every_secret_is_required_and_none_has_a_default():
    required = {name for name, op, _ in references() if op == ":?"}
    # PUBLIC_BASE_URL is no secret, but production refuses to start without
    # an https one: compose asks for it rather than default to plain HTTP.
    assert required == SECRETS | {"PUBLIC_BASE_URL"}
    for name, op, arg in references():
        secretish = re.search(r"SECRET|PASSWORD|TOKEN|_KEY$", name)
        if secretish and op == ":-":
            assert arg == "", f"{name} has a default value in docker-compose.yml"
    # Nothing published in this repository sits in the file as a value either.
    for demo in ("compose-demo-secret-key-change-me", "sk_test_fairqueue_sandbox", ":-fairqueue}"):
        assert demo not in COMPOSE


def test_the_app_runs_in_production_mode():
    for name in ("web", "ws", "worker", "beat", "migrate"):
        env = SERVICES[name]["environment"]
        assert env["DJANGO_DEBUG"] == "false", name
        assert env["NUM_PROXIES"] == "1", name
    assert "-A config" in " ".join(SERVICES["beat"]["command"])


def test_the_sandbox_is_demo_only_on_the_loopback_with_its_control_token_and_no_app_secret():
    """(And nothing but nginx is published beyond the loopback.)"""
    for name in ("sandbox", "mailpit"):
        assert SERVICES[name]["profiles"] == ["demo"], name
        assert all(port.startswith("127.0.0.1:") for port in SERVICES[name]["ports"]), name
    env = SERVICES["sandbox"]["environment"]
    assert "SANDBOX_CONTROL_TOKEN" in env
    assert not {"DJANGO_SECRET_KEY", "TOKEN_SIGNING_KEY", "DATABASE_URL"} & set(env)
    published = {s for s, body in SERVICES.items() if body.get("ports")}
    assert "nginx" in published
    for name in published - {"nginx"}:  # everything but the site itself: loopback only
        assert all(port.startswith("127.0.0.1:") for port in SERVICES[name]["ports"]), name


def test_compose_creates_the_first_admin_from_the_environment():
    migrate = SERVICES["migrate"]
    assert "manage.py ensure_superuser" in " ".join(migrate["command"])
    env = migrate["environment"]
    assert {"DJANGO_SUPERUSER_USERNAME", "DJANGO_SUPERUSER_PASSWORD"} <= set(env)


def dockerfile_stages() -> dict[str, str]:
    """Each ``FROM ... AS name`` stage of the Dockerfile: its text."""
    dockerfile = (REPO / "Dockerfile").read_text()
    parts = re.split(r"^FROM\s+\S+\s+AS\s+(\w+)\s*$", dockerfile, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_image_holds_every_package_of_the_product_and_none_of_its_tools():
    dockerfile = (REPO / "Dockerfile").read_text()
    stages = dockerfile_stages()
    # `docker build .` (every app service) makes the last stage.
    assert list(stages)[-1] == "app"
    app = stages["app"]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    assert packages
    assert "devtools" not in packages
    for package in packages:
        assert f"COPY {package} ./{package}" in app, package
    assert "devtools" not in stages["base"] + app
    assert not re.search(r"^COPY \. ", dockerfile, flags=re.M)  # nothing copied wholesale
    assert "DJANGO_SECRET_KEY=" not in dockerfile


def test_the_sandbox_runs_from_an_image_of_its_own():
    sandbox = SERVICES["sandbox"]
    assert sandbox["build"] == {"context": ".", "target": "sandbox"}
    assert sandbox["image"] != SERVICES["web"]["image"]
    assert "devtools.sandbox" in sandbox["command"]
    stage = dockerfile_stages()["sandbox"]
    assert "COPY devtools/sandbox ./devtools/sandbox" in stage
    for name in ("web", "ws", "worker", "beat", "migrate"):
        assert SERVICES[name].get("build", ".") == ".", name


def test_nginx_logs_no_query_string_for_the_websocket():
    conf = (REPO / "deploy" / "nginx.conf").read_text()
    formats = dict(re.findall(r"log_format\s+(\w+)\s+((?:'[^']*'\s*)+);", conf))
    ws = re.search(r"location /ws/ \{(.*?)\n    \}", conf, re.S).group(1)
    used = re.search(r"access_log\s+\S+\s+(\w+);", ws).group(1)
    assert used in formats
    for leak in ("$request ", '$request"', "$request_uri", "$args", "$query_string", "$arg_"):
        assert leak not in formats[used] + " ", leak
    assert "$uri" in formats[used]


def test_nginx_does_not_serve_the_metrics_outside():
    """Prometheus scrapes web:8000 and ws:8001 inside the network."""
    conf = (REPO / "deploy" / "nginx.conf").read_text()
    block = re.search(r"location = /metrics \{(.*?)\}", conf, re.S)
    assert block is not None
    assert block.group(1).split() == ["return", "404;"]
    targets = re.findall(
        r'targets: \["([^"]+)"\]', (REPO / "deploy/prometheus/prometheus.yml").read_text()
    )
    assert targets == ["web:8000", "ws:8001", "worker:9100", "beat:9100"]  # never nginx


# --- ensure_superuser ------------------------------------------------------------------


@pytest.mark.django_db
def test_ensure_superuser_creates_the_admin_once_and_never_prints_the_password(monkeypatch):
    password = "a long and unusual passphrase"
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "root")
    monkeypatch.setenv("DJANGO_SUPERUSER_EMAIL", "root@example.test")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", password)
    first, second = StringIO(), StringIO()

    call_command("ensure_superuser", stdout=first)
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "another passphrase entirely")
    call_command("ensure_superuser", stdout=second)

    [user] = get_user_model().objects.all()
    assert (user.username, user.is_staff, user.is_superuser) == ("root", True, True)
    assert user.check_password(password)  # the second run changed nothing
    assert "created" in first.getvalue() and "unchanged" in second.getvalue()
    assert password not in first.getvalue() + second.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize(("password", "message"), [("", "is not set"), ("admin", "too short")])
def test_ensure_superuser_refuses_a_missing_or_weak_password(monkeypatch, password, message):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", password)
    with pytest.raises(CommandError, match=message):
        call_command("ensure_superuser", stdout=StringIO())
    assert get_user_model().objects.count() == 0
