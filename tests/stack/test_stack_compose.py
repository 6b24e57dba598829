"""compose.yaml against the Compose Specification's JSON schema (vendored: compose-spec/), and
the checks that matter beyond the schema: two Fable replicas built alike, health checks and
restart policies everywhere, secrets only as files, Fable's settings named as Fable reads them,
a stop grace period above the drain, and a proxy (deploy/Caddyfile, adapted by the real Caddy)
whose upstreams are the Fable services. deploy/searxng/settings.yml as Fable needs SearXNG."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from support.pace import scaled
from support.stack import CADDYFILE, ROOT, caddy_env

from fable_core.config import Settings

FABLES = ("fable1", "fable2")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    assert isinstance(env, dict), "environment as a mapping"
    return {name: str(value) for name, value in env.items()}


def test_compose_yaml_is_valid_against_the_compose_specification(compose: dict[str, Any]) -> None:
    schema = json.loads((Path(__file__).parent / "compose-spec/compose-spec.json").read_text())
    validator = jsonschema.Draft201909Validator(schema)
    assert [error.message for error in validator.iter_errors(compose)] == []
    misspelt = {**compose, "services": {**compose["services"], "fable1": {**compose["services"]["fable1"],
                                                                             "helthcheck": {}}}}
    assert not validator.is_valid(misspelt)  # the schema does catch a wrong key


def test_two_replicas_alike_each_healthy_restarting_and_drained_before_a_kill(compose: dict[str, Any]) -> None:
    services = compose["services"]
    one, two = (services[name] for name in FABLES)
    # one definition (the x-fable anchor): the replicas differ in nothing but a setting naming
    # the replica itself, should one be added (its own address, say)
    renamed = json.loads(json.dumps(one).replace("fable1", "fable2"))
    assert renamed == two
    # each names its own address, where the other forwards its MCP sessions' requests
    assert [_env(services[name])["FABLE_REPLICA_URL"] for name in FABLES] == [
        f"http://{name}:8000" for name in FABLES]
    for name, service in services.items():
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"
        assert service.get("restart") == "unless-stopped", name
    test = one["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"] and "/api/health" in test[3]  # the image has no curl
    grace = float(one["stop_grace_period"].removesuffix("s"))
    assert grace > float(_env(one)["FABLE_SHUTDOWN_TIMEOUT"])
    assert services["db"]["image"] == "pgvector/pgvector:pg17"
    assert one["depends_on"]["db"] == {"condition": "service_healthy"}
    declared = set(compose["volumes"])
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert (source.startswith("./") and (ROOT / source).exists()) or source in declared, (name, volume)


def test_secrets_are_files_and_every_file_variable_names_one(compose: dict[str, Any]) -> None:
    declared = compose["secrets"]
    assert all(set(secret) == {"file"} for secret in declared.values())
    for name, service in compose["services"].items():
        env = _env(service)
        for variable, value in env.items():
            if variable.endswith("_FILE"):
                secret = value.removeprefix("/run/secrets/")
                assert value.startswith("/run/secrets/") and secret in service["secrets"] and secret in declared, \
                    (name, variable)
            assert "PASSWORD" not in variable or variable.endswith("_FILE"), (name, variable)
        assert "DATABASE_URL" not in env and "FABLE_SECRET_KEY" not in env
    fable = _env(compose["services"]["fable1"])
    assert {"DATABASE_URL_FILE", "FABLE_SECRET_KEY_FILE"} <= set(fable)
    assert _env(compose["services"]["db"])["POSTGRES_PASSWORD_FILE"] == "/run/secrets/db_password"


def test_fable_is_configured_with_settings_it_reads(compose: dict[str, Any]) -> None:
    env = _env(compose["services"]["fable1"])
    for variable in env:
        assert variable.removesuffix("_FILE").lower() in Settings.model_fields, f"Fable reads no {variable}"
    assert env["SECURE_COOKIES"] == "true" and env["TRUST_PROXY_HEADERS"] == "true"
    assert env["FABLE_BASE_URL"].startswith("https://${FABLE_DOMAIN")  # its host is the one Fable answers to
    assert env["SEARXNG_URL"] == "http://searxng:8080" and env["OLLAMA_URL"] == "http://ollama:11434"


def test_the_proxy_serves_the_domain_over_https_and_balances_the_fable_services(
    compose: dict[str, Any], caddy_bin: Path, tmp_path: Path,
) -> None:
    proxy = compose["services"]["proxy"]
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in proxy["volumes"]
    assert {"80:80", "443:443"} <= set(proxy["ports"])
    assert "http://localhost:2019/config/" in proxy["healthcheck"]["test"]  # the admin endpoint (tests/stack runs it)
    adapted = subprocess.run([str(caddy_bin), "adapt", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
                             env=caddy_env(tmp_path, FABLE_DOMAIN="fable.example.com"),
                             capture_output=True, text=True, check=True, timeout=scaled(30))
    (server,) = json.loads(adapted.stdout)["apps"]["http"]["servers"].values()
    assert server["listen"] == [":443"] and "automatic_https" not in server  # a certificate for the name
    (route,) = server["routes"]
    assert route["match"] == [{"host": ["fable.example.com"]}]
    assert _find(route, "headers")["response"]["set"] == {"Strict-Transport-Security": ["max-age=31536000"]}
    proxy_handler = _find(route, "reverse_proxy")
    port = "8000"  # the image's CMD
    assert [u["dial"] for u in proxy_handler["upstreams"]] == [f"{name}:{port}" for name in FABLES]
    active = proxy_handler["health_checks"]["active"]
    assert active["uri"] == "/api/health"
    # asked as localhost: a replica answers `Host: fable1:8000` with 421 (test_stack_proxy.py)
    assert active["headers"] == {"Host": ["localhost"]}
    assert proxy_handler["health_checks"]["passive"]["max_fails"] >= 1
    assert proxy_handler["flush_interval"] == -1
    balancing = proxy_handler["load_balancing"]
    assert balancing["selection_policy"] == {"policy": "round_robin"} and balancing["retries"] >= 1


def _find(node: Any, handler: str) -> dict[str, Any]:
    """The first handler of that name in an adapted Caddy route, however deeply nested."""
    if isinstance(node, dict):
        if node.get("handler") == handler:
            return node
        children: list[Any] = list(node.values())
    elif isinstance(node, list):
        children = node
    else:
        children = []
    for child in children:
        try:
            return _find(child, handler)
        except LookupError:
            continue
    raise LookupError(handler)


def test_searxng_answers_json_without_its_bot_limiter_and_keeps_no_secret_in_the_file(
    compose: dict[str, Any],
) -> None:
    settings = yaml.safe_load((ROOT / "deploy/searxng/settings.yml").read_text())
    assert "json" in settings["search"]["formats"]  # Fable asks for format=json
    assert settings["server"]["limiter"] is False
    assert "secret_key" not in settings["server"]
    searxng = compose["services"]["searxng"]
    assert searxng["secrets"] == ["searxng_secret"] and "/run/secrets/searxng_secret" in " ".join(searxng["entrypoint"])
    assert "./deploy/searxng/settings.yml:/etc/searxng/settings.yml:ro" in searxng["volumes"]
