"""The registry: every Fable capability, registered once, from which every surface is generated.

A tool is a typed ``async def`` decorated with :func:`tool`. The decorator derives its argument
and result schemas (``fable_core.tools._schema``), records its metadata, and returns the function
unchanged. Surfaces (MCP, REST, the assistant, the CLI) only loop over :data:`REGISTRY`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from fable_core.tools._schema import ToolSignature, build_signature, split_docstring
from fable_core.tools.availability import Availability
from fable_core.tools.caller import Caller, Scope

if TYPE_CHECKING:
    from pydantic import BaseModel

    from fable_core.config import Settings

__all__ = ["CLIENT_CAPABILITIES", "REGISTRY", "Annotations", "Credentials", "Follow", "Registry", "Route", "Tool",
           "Transaction", "tool"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
CLIENT_CAPABILITIES = frozenset({"sampling", "elicitation", "roots"})
"""What a tool may need its MCP client to have declared (``client_needs``)."""
_NAME = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
_GROUP = re.compile(r"^[a-z][a-z0-9]{1,31}$")
HttpMethod = Literal["GET", "POST", "PATCH", "PUT", "DELETE"]
Credentials = Literal["any", "session"]
"""Who may run a tool beyond its scope and role: ``any`` credential, or only a person in a
signed-in session or the operator's command line (``session``: never an API key or OAuth
token, never the assistant; :attr:`fable_core.tools.caller.Caller.in_person`)."""
Transaction = Literal["call", "phases"]
"""How a tool meets the database. ``call``: the dispatcher opens one transaction (a write tool)
or one reading session (a read tool) around the whole call. ``phases``: the tool waits on
something remote (a model, a fetch) and must hold no connection meanwhile; it opens its own
database phases with ``ctx.transaction()`` / ``ctx.reading()``, each atomic, between the waits."""


@dataclass(frozen=True, slots=True)
class Route:
    """Where REST serves a tool: ``Route("GET", "/notes/{note_id}")`` (relative to ``/api``).

    Path parameters must be tool parameters. For GET and DELETE the remaining arguments come
    from the query string; otherwise from the JSON body. ``status`` is the success status
    (``201`` for a creation, ``202`` for work that goes on after the answer).
    """

    method: HttpMethod
    path: str
    status: int = 200

    @property
    def path_params(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)


@dataclass(frozen=True, slots=True)
class Annotations:
    """MCP tool annotations (hints to clients, not enforcement)."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


@dataclass(frozen=True, slots=True)
class Follow:
    """The work a tool starts and leaves running when it returns (``@tool(followed_by=...)``),
    and how to wait for it: what a surface that must not end before the work does (the CLI, whose
    process would end it) runs after the tool.

    ``tool`` is the stream tool that follows the work to its end, ``stop`` the tool that stops
    it; both are called with ``arguments``, each of their parameters named to the field of the
    started tool's result that gives its value (``{"run_id": "id"}``). ``status`` is the field,
    of the started result and of the follow tool's, that says how the work stands: ``running``
    while it goes on (a started result without the field always goes on) and ``done`` once it
    ended well. ``at_once`` are arguments that make a tool which can also follow its work itself
    return as soon as the work is started (research's ``wait=false``), so that a surface holds
    what it needs to stop the work before it waits. The registry checks the names once every
    tool is loaded (:meth:`Registry.check`).
    """

    tool: str
    stop: str
    arguments: Mapping[str, str]
    at_once: Mapping[str, Any] = field(default_factory=dict)
    status: str = "status"
    running: str = "running"
    done: str = "done"

    def pending(self, started: BaseModel) -> bool:
        """Whether the work ``started`` (the tool's result) tells of still goes on."""
        return bool(getattr(started, self.status, self.running) == self.running)

    def arguments_of(self, started: BaseModel) -> dict[str, Any]:
        """The arguments of :attr:`tool` and :attr:`stop` for the work ``started`` tells of."""
        return {param: getattr(started, source) for param, source in self.arguments.items()}

    def ended_well(self, result: BaseModel) -> bool:
        """Whether ``result`` (the follow tool's, or a started result whose work had ended) says
        the work is done, rather than failed, stopped or cut off."""
        return bool(getattr(result, self.status, self.done) == self.done)


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    title: str
    description: str
    scope: Scope
    annotations: Annotations
    route: Route | None
    group: str  # its toolset: a stable public name (FABLE_MCP_TOOLSETS, OpenAPI tags, docs), not a file's
    module: str
    fn: Callable[..., Awaitable[Any]]
    transaction: Transaction
    stream: bool
    signature: ToolSignature = field(repr=False)
    admin: bool = False
    needs: frozenset[str] = frozenset()
    agents: bool = True  # offered to agents (MCP clients, the assistant); False: for the UI's devices only
    body_limit: Callable[[Settings], int] | None = None  # a Binary tool's REST body limit (default: an image's)
    client_needs: frozenset[str] = frozenset()  # MCP client capabilities it relies on (CLIENT_CAPABILITIES)
    credentials: Credentials = "any"
    confirm: bool = False  # the in-app assistant asks the user before it runs (:mod:`fable_core.assistant.toolloop`)
    assistant: bool = True  # the in-app assistant may describe and run it (False: MCP clients and people only)
    followed_by: Follow | None = None  # the work it leaves running, and the tools that follow and stop it

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.signature.input_schema

    @property
    def strict_schema(self) -> dict[str, Any]:
        """The input schema with every bound validation applies (OpenAPI publishes it; tool lists
        read by models carry the shorter :attr:`input_schema`)."""
        return self.signature.strict_schema

    @property
    def output_schema(self) -> dict[str, Any]:
        return self.signature.output_schema

    def allows(self, caller: Caller) -> bool:
        """May ``caller`` run it: its scope reaches the tool's, an admin tool needs an admin, and
        a session-only tool a person signed in (or the operator)."""
        return ((self.scope == "read" or caller.can_write) and (not self.admin or caller.is_admin)
                and (self.credentials == "any" or caller.in_person))


class Registry:
    """A set of tools by name, in capability order (:mod:`fable_core.capabilities`): the order
    every surface lists them in is a decision, not the order modules happened to be imported."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._ordered: list[Tool] | None = None
        self._rank: Callable[[str], int] | None = None

    def rank_modules(self, rank: Callable[[str], int]) -> None:
        """List tools by ``rank`` of their module first (the capabilities' order), then in the
        order they were registered; unranked, a registry lists them as registered."""
        self._rank = rank
        self._ordered = None

    def add(self, t: Tool) -> None:
        if t.name in self._tools:
            raise ValueError(f"tool {t.name!r} is already registered")
        if t.route is not None:
            for other in self._tools.values():
                if other.route is not None and (other.route.method, other.route.path) == (t.route.method, t.route.path):
                    raise ValueError(f"tools {other.name!r} and {t.name!r} share route {t.route}")
        self._tools[t.name] = t
        self._ordered = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def prepare_schemas(self) -> None:
        """Make every tool's JSON Schemas now (each is made when first read, to keep a stdio
        start short): a server does it before it serves, off its event loop, so that no request
        makes 180 of them there (``fable_mcp.http``)."""
        for t in self:
            t.signature.strict_schema, t.signature.input_schema, t.signature.output_schema  # noqa: B018

    def __iter__(self) -> Iterator[Tool]:
        if self._ordered is None:
            rank = self._rank or (lambda _: 0)
            seq = {name: i for i, name in enumerate(self._tools)}
            self._ordered = sorted(self._tools.values(), key=lambda t: (rank(t.module), seq[t.name]))
        return iter(self._ordered)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def check(self) -> None:
        """Refuse what one tool cannot check alone, once every tool is registered: a
        ``followed_by`` must name a stream tool that follows the work and a write tool that
        stops it, each taking the arguments the follow maps and needing no other."""
        for t in self._tools.values():
            if t.followed_by is not None:
                self._check_follow(t, t.followed_by)

    def _check_follow(self, t: Tool, follow: Follow) -> None:
        for role, name in (("follows", follow.tool), ("stops", follow.stop)):
            other = self._tools.get(name)
            if other is None:
                raise ValueError(f"tool {t.name!r} is followed_by {name!r}, which is no tool")
            if role == "follows" and not other.stream:
                raise ValueError(f"tool {t.name!r}: {name!r} follows its work, so it must be a stream tool")
            if role == "stops" and other.scope != "write":
                raise ValueError(f"tool {t.name!r}: {name!r} stops its work, so it must be a write tool")
            fields = other.signature.arguments.model_fields
            required = {n for n, f in fields.items() if f.is_required()}
            if unknown := set(follow.arguments) - set(fields):
                raise ValueError(f"tool {t.name!r}: {name!r} takes no {sorted(unknown)}")
            if unmapped := required - set(follow.arguments):
                raise ValueError(f"tool {t.name!r}: {name!r} needs {sorted(unmapped)}, which followed_by does not map")
        if follow.status not in self._tools[follow.tool].signature.output.model_fields:
            raise ValueError(f"tool {t.name!r}: {follow.tool!r}'s result has no field {follow.status!r}")

    def for_caller(self, caller: Caller, available: Availability | None = None) -> list[Tool]:
        """The tools to offer this caller: those it may run (a read-scope caller sees only read
        tools, a non-admin no admin tools) and, given ``available``, whose services answer."""
        return [t for t in self if t.allows(caller) and (available is None or available.meets(t.needs))]

    def for_agents(self, caller: Caller, available: Availability | None = None) -> list[Tool]:
        """:meth:`for_caller` less the tools only a device uses (``agents=False``): what MCP
        clients and the assistant are offered."""
        return [t for t in self.for_caller(caller, available) if t.agents]


REGISTRY = Registry()


def tool(
    *,
    group: str,
    title: str,
    scope: Scope,
    destructive: bool = False,
    idempotent: bool | None = None,
    open_world: bool = False,
    route: Route | None = None,
    name: str | None = None,
    registry: Registry | None = None,
    transaction: Transaction = "call",
    stream: bool = False,
    admin: bool = False,
    needs: tuple[str, ...] = (),
    agents: bool = True,
    body_limit: Callable[[Settings], int] | None = None,
    client_needs: tuple[str, ...] = (),
    credentials: Credentials = "any",
    confirm: bool | None = None,
    assistant: bool = True,
    followed_by: Follow | None = None,
) -> Callable[[F], F]:
    """Register an async function as a tool and return it unchanged.

    ``group`` is its toolset (``"notes"``, ``"calendar"``): the stable public name clients select
    tools by (``FABLE_MCP_TOOLSETS``, ``enable_toolset``), OpenAPI tags and the docs list them under, declared here so
    that moving or renaming a file changes no configuration.
    ``scope="read"`` tools are read-only (and idempotent unless told otherwise); write tools
    declare whether they are ``destructive`` (delete or overwrite data) and ``idempotent``.
    A tool that waits on a remote service declares ``transaction="phases"`` (see
    :data:`Transaction`). A ``stream`` tool reports progress as it works
    (``await ctx.progress(event, data)``: tokens of an answer, say) and returns its result like
    any tool; surfaces that can show progress do (MCP progress notifications, SSE on REST), the
    others just get the result. Streams always run in phases. An ``admin`` tool is offered to
    and run for admins only. ``needs`` names the optional services it cannot work without
    (``"llm"``): it is offered only while they answer (:mod:`fable_core.tools.availability`).
    ``agents=False`` marks a tool only a device can use (a browser's Web Push subscription): it
    is not offered to MCP clients or the assistant, and runs on REST and the CLI as any tool.
    ``body_limit``: the largest body (from the settings) a tool with a Binary argument takes on
    its REST route (unset: ``FABLE_IMAGE_MAX_BYTES``); the HTTP layer refuses more with 413.
    ``client_needs``: the MCP client capabilities the tool relies on (``"sampling"``,
    ``"elicitation"``, ``"roots"``); an MCP client that did not declare them is refused with
    error -32021 (HTTP 400) before the tool runs (:mod:`fable_mcp.tools`). No Fable tool needs one yet.
    ``credentials="session"``: only a person in a signed-in session or the operator's command
    line may run it (:data:`Credentials`); it is offered to nobody else.
    ``confirm``: when the in-app assistant's model calls it, the user confirms the call before it
    runs (a model's reading of a page or a message may be someone else's instructions). Unset: a
    ``destructive`` tool asks; say ``confirm=True`` for one that sends data out or gives others
    access, ``False`` for a destructive one whose loss is trivial.
    ``assistant=False``: the in-app assistant never describes nor runs it (managing the model
    server, the assistant's own turns); MCP clients and the other surfaces still have it.
    ``followed_by``: the tool starts work that goes on after it returns (a chat answer, a
    research run), and :class:`Follow` names the tools that follow and stop it; the CLI waits for
    that work instead of ending it with its process.
    """
    if transaction not in ("call", "phases"):
        raise ValueError(f"transaction must be 'call' or 'phases', not {transaction!r}")
    if not _GROUP.match(group):
        raise ValueError(f"group {group!r} must be a lowercase word")
    if callable(title):  # bare @tool
        raise TypeError("use @tool(group=..., title=..., scope=...), not bare @tool")
    if scope not in ("read", "write"):
        raise ValueError(f"scope must be 'read' or 'write', not {scope!r}")
    if unknown_needs := set(client_needs) - CLIENT_CAPABILITIES:
        raise ValueError(f"client_needs: unknown {sorted(unknown_needs)}; use {sorted(CLIENT_CAPABILITIES)}")

    def decorate(fn: F) -> F:
        _require_async(fn)
        tool_name = name or fn.__name__
        if not _NAME.match(tool_name):
            raise ValueError(f"tool name {tool_name!r} must be snake_case")
        description, _ = split_docstring(fn)
        if not description:
            raise ValueError(f"tool {tool_name!r} needs a docstring: it is the description")
        signature = build_signature(fn, tool_name)
        if route is not None:
            unknown = set(route.path_params) - set(signature.arguments.model_fields)
            if unknown:
                raise ValueError(f"tool {tool_name!r}: route parameters {unknown} are not arguments")
        if followed_by is not None:
            _check_started(tool_name, signature, followed_by)
        (REGISTRY if registry is None else registry).add(
            Tool(
                name=tool_name,
                title=title,
                description=description,
                scope=scope,
                annotations=Annotations(
                    read_only=scope == "read",
                    destructive=destructive,
                    idempotent=(scope == "read") if idempotent is None else idempotent,
                    open_world=open_world,
                ),
                route=route,
                group=group,
                module=fn.__module__,
                fn=fn,
                transaction="phases" if stream else transaction,
                stream=stream,
                signature=signature,
                admin=admin,
                needs=frozenset(needs),
                agents=agents,
                body_limit=body_limit,
                client_needs=frozenset(client_needs),
                credentials=credentials,
                confirm=destructive if confirm is None else confirm,
                assistant=assistant,
                followed_by=followed_by,
            )
        )
        return fn

    return decorate


def _check_started(name: str, signature: ToolSignature, follow: Follow) -> None:
    """What a ``followed_by`` says of the tool itself: its result has the fields the follow maps
    (and its status, where it has one), its arguments the ``at_once`` ones."""
    if not follow.arguments:
        raise ValueError(f"tool {name!r}: followed_by maps no argument of {follow.tool!r}")
    if missing := set(follow.arguments.values()) - set(signature.output.model_fields):
        raise ValueError(f"tool {name!r}: followed_by reads {sorted(missing)}, which its result does not have")
    if unknown := set(follow.at_once) - set(signature.arguments.model_fields):
        raise ValueError(f"tool {name!r}: followed_by's at_once names {sorted(unknown)}, which are no arguments")


def _require_async(fn: Callable[..., object]) -> None:
    # a function of its own: the check narrows ``fn``, and the decorator returns it as it came
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"tool {fn.__qualname__} must be an async function")
