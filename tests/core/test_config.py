"""Settings from the environment: names, ``*_FILE`` secrets, clear errors, the generated key."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from threading import Barrier

import pytest

from fable_core.config import Settings, load_settings
from fable_core.errors import InvalidInput


def test_every_field_is_read_from_its_upper_case_variable(tmp_path: Path) -> None:
    settings = load_settings({
        "DATABASE_URL": "postgresql://db/fable",
        "FABLE_DATA_DIR": str(tmp_path),
        "FABLE_PORT": "9001",
        "SECURE_COOKIES": "yes",
        "FABLE_ALLOWED_HOSTS": "fable.example.com, notes.example.com:*,",
        "LLM_PROVIDER": "none",
    })
    assert settings.database_url == "postgresql://db/fable"
    assert settings.fable_data_dir == tmp_path and settings.pg_data_dir == tmp_path / "pg"
    assert settings.fable_port == 9001 and settings.secure_cookies is True
    assert settings.fable_allowed_hosts == ["fable.example.com", "notes.example.com:*"]
    assert settings.llm_provider == "none"


def test_defaults_apply_when_the_environment_is_empty() -> None:
    settings = load_settings({})
    assert settings.database_url is None, "no DATABASE_URL means the embedded server"
    assert settings.fable_port == 8000 and settings.fable_host == "127.0.0.1"
    assert settings.fable_data_dir.name == "fable"


def test_file_variant_reads_a_docker_secret(tmp_path: Path) -> None:
    secret = tmp_path / "db_url"
    secret.write_text("postgresql://from-file/fable\n")
    password = tmp_path / "smtp"
    password.write_text("  s3cret  \n")
    settings = load_settings({"DATABASE_URL_FILE": str(secret), "SMTP_PASSWORD_FILE": str(password)})
    assert settings.database_url == "postgresql://from-file/fable"
    assert settings.smtp_password == "s3cret"


def test_the_variable_itself_wins_over_its_file_variant(tmp_path: Path) -> None:
    secret = tmp_path / "key"
    secret.write_text("from-file")
    env = {"FABLE_SECRET_KEY": "from-env", "FABLE_SECRET_KEY_FILE": str(secret)}
    assert load_settings(env).fable_secret_key == "from-env"


def test_unreadable_file_variant_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as raised:
        load_settings({"SMTP_PASSWORD_FILE": str(tmp_path / "missing")})
    assert "SMTP_PASSWORD_FILE" in raised.value.message
    assert "missing" in raised.value.message


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("FABLE_PORT", "eighty", "FABLE_PORT='eighty'"),
        ("FABLE_PORT", "70000", "FABLE_PORT='70000'"),
        ("SECURE_COOKIES", "maybe", "SECURE_COOKIES='maybe'"),
        ("LLM_PROVIDER", "skynet", "LLM_PROVIDER='skynet'"),
        ("FABLE_DB_POOL_SIZE", "0", "FABLE_DB_POOL_SIZE='0'"),
    ],
)
def test_bad_value_is_a_clear_error_naming_the_variable(variable: str, value: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        load_settings({variable: value})
    assert raised.value.message.startswith("invalid configuration: ")
    assert expected in raised.value.message
    assert len(raised.value.details["errors"]) == 1


def test_several_bad_values_are_all_reported() -> None:
    with pytest.raises(InvalidInput) as raised:
        load_settings({"FABLE_PORT": "x", "FABLE_LOG_LEVEL": "loud"})
    assert "FABLE_PORT" in raised.value.message and "FABLE_LOG_LEVEL" in raised.value.message


def test_a_bad_secret_value_is_never_echoed() -> None:
    with pytest.raises(InvalidInput) as raised:
        load_settings({}, openai_api_key=12345)
    assert "OPENAI_API_KEY" in raised.value.message and "12345" not in raised.value.message


def test_settings_are_immutable(tmp_path: Path) -> None:
    settings = load_settings({"FABLE_DATA_DIR": str(tmp_path)})
    with pytest.raises(ValueError, match="frozen"):
        settings.fable_port = 1  # type: ignore[misc]


def test_secret_key_is_generated_once_with_mode_0600_and_reused(tmp_path: Path) -> None:
    settings = load_settings({"FABLE_DATA_DIR": str(tmp_path / "data")})
    key = settings.secret_key()
    path = tmp_path / "data" / "secret_key"
    assert len(key) >= 48 and path.read_text() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = load_settings({"FABLE_DATA_DIR": str(tmp_path / "data")})
    assert again.secret_key() == key, "a restart keeps the key (and everyone's sessions)"
    assert sorted(p.name for p in path.parent.iterdir()) == ["secret_key"]


def test_concurrent_first_starts_agree_on_one_key(tmp_path: Path) -> None:
    barrier = Barrier(8)

    def start() -> str:
        barrier.wait()
        return Settings(fable_data_dir=tmp_path).secret_key()

    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: start(), range(8)))
    assert keys == {(tmp_path / "secret_key").read_text()}


def test_configured_secret_key_is_used_and_nothing_is_written(tmp_path: Path) -> None:
    settings = load_settings({"FABLE_DATA_DIR": str(tmp_path), "FABLE_SECRET_KEY": "configured"})
    assert settings.secret_key() == "configured"
    assert not (tmp_path / "secret_key").exists()
