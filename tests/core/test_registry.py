"""The registry: what ``@tool`` accepts and refuses, the schemas it derives, and a snapshot.

Negative cases register on a private :class:`Registry`, never on the global one. The snapshot
(``tests/core/snapshots/registry.json``) is what every surface shows clients: when a tool is
added or changed on purpose, regenerate it with

    UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/core/test_registry.py

and review the diff.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field
from support.snapshots import assert_json_matches

from fable_core.capabilities import load_capabilities
from fable_core.tools import REGISTRY, Context, Follow, Registry, Route, tool
from fable_core.tools.caller import Caller

SNAPSHOT = Path(__file__).with_name("snapshots") / "registry.json"


class Echo(BaseModel):
    id: int
    text: str


@pytest.fixture
def registry() -> Registry:
    return Registry()


def register_echo(registry: Registry, **options: Any) -> None:
    options.setdefault("scope", "read")

    options.setdefault("group", "test")

    @tool(title="Echo", registry=registry, **options)
    async def echo(ctx: Context, note_id: int, text: str = "hi") -> Echo:
        """Echo the text back.

        A second paragraph of description.

        Args:
            note_id: Which note to echo for.
            text: What to say;
                continued on a second line.
        """
        return Echo(id=note_id, text=text)


def test_schemas_are_made_when_first_read_and_prepare_schemas_makes_them_all(registry: Registry) -> None:
    """A stdio start reads a few tools' schemas (pydantic takes about 2 ms a tool); a server
    makes them all before it serves (``fable_mcp.http``), not on its event loop."""
    register_echo(registry)
    signature = registry.get("echo").signature  # type: ignore[union-attr]
    assert not {"strict_schema", "input_schema", "output_schema"} & set(vars(signature))
    registry.prepare_schemas()
    assert {"strict_schema", "input_schema", "output_schema"} <= set(vars(signature))
    assert signature.input_schema["required"] == ["note_id"]


# --- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize("group", ["", "Notes", "my_notes", "notes/tasks"])
def test_a_toolset_name_that_is_not_a_lowercase_word_is_refused(registry: Registry, group: str) -> None:
    with pytest.raises(ValueError, match="must be a lowercase word"):
        register_echo(registry, group=group)
    assert len(registry) == 0


def test_bare_decorator_is_refused(registry: Registry) -> None:
    with pytest.raises(TypeError):

        @tool  # type: ignore[call-arg, arg-type]
        async def bare(ctx: Context) -> Echo:
            """Bare."""
            raise NotImplementedError

    assert len(registry) == 0


def test_duplicate_names_are_refused(registry: Registry) -> None:
    register_echo(registry)
    with pytest.raises(ValueError, match="'echo' is already registered"):
        register_echo(registry)
    assert len(registry) == 1


def test_duplicate_routes_are_refused(registry: Registry) -> None:
    register_echo(registry, route=Route("GET", "/echo/{note_id}"))
    with pytest.raises(ValueError, match="share route"):
        register_echo(registry, route=Route("GET", "/echo/{note_id}"), name="echo_again")


def test_route_parameters_must_be_arguments(registry: Registry) -> None:
    with pytest.raises(ValueError, match="route parameters"):
        register_echo(registry, route=Route("GET", "/echo/{other_id}"))


class Started(BaseModel):
    work_id: int


class Outcome(BaseModel):
    status: str


def register_work(registry: Registry, follow: Follow, *, stream: bool = True, stop_scope: Any = "write") -> None:
    """``start_work``, followed by ``follow``; ``follow_work`` and ``stop_work`` to name in it."""

    @tool(group="test", title="Start", scope="write", registry=registry, followed_by=follow)
    async def start_work(ctx: Context) -> Started:
        """Start work that goes on."""
        return Started(work_id=1)

    @tool(group="test", title="Follow", scope="read", registry=registry, stream=stream)
    async def follow_work(ctx: Context, work_id: int, last_event_id: str | None = None) -> Outcome:
        """Follow the work."""
        return Outcome(status="done")

    @tool(group="test", title="Stop", scope=stop_scope, registry=registry)
    async def stop_work(ctx: Context, work_id: int) -> Outcome:
        """Stop the work."""
        return Outcome(status="stopped")


_WORK = {"work_id": "work_id"}


@pytest.mark.parametrize(
    ("follow", "options", "message"),
    [
        (Follow("follow_wrok", stop="stop_work", arguments=_WORK), {}, "followed_by 'follow_wrok', which is no tool"),
        (Follow("follow_work", stop="stop_work", arguments=_WORK), {"stream": False}, "must be a stream tool"),
        (Follow("follow_work", stop="stop_work", arguments=_WORK), {"stop_scope": "read"}, "must be a write tool"),
        (Follow("follow_work", stop="stop_work", arguments={"work_id": "work_id", "job_id": "work_id"}), {},
         r"'follow_work' takes no \['job_id'\]"),
        (Follow("follow_work", stop="stop_work", arguments=_WORK, status="state"), {}, "result has no field 'state'"),
    ],
)
def test_a_followed_by_names_a_stream_tool_and_a_write_tool_taking_its_arguments(
    registry: Registry, follow: Follow, options: dict[str, Any], message: str
) -> None:
    register_work(registry, follow, **options)
    with pytest.raises(ValueError, match=message):
        registry.check()  # once every tool is registered (load_capabilities does it)


def test_a_followed_by_maps_every_argument_the_follow_tool_needs(registry: Registry) -> None:
    @tool(group="test", title="Follow", scope="read", registry=registry, stream=True)
    async def follow_pair(ctx: Context, work_id: int, part: int) -> Outcome:
        """Follow one part of the work."""
        return Outcome(status="done")

    register_work(registry, Follow("follow_pair", stop="stop_work", arguments=_WORK))
    with pytest.raises(ValueError, match=r"'follow_pair' needs \['part'\], which followed_by does not map"):
        registry.check()


@pytest.mark.parametrize(
    ("follow", "message"),
    [
        (Follow("follow_work", stop="stop_work", arguments={}), "maps no argument"),
        (Follow("follow_work", stop="stop_work", arguments={"work_id": "id"}), r"reads \['id'\], which its result"),
        (Follow("follow_work", stop="stop_work", arguments=_WORK, at_once={"wait": False}),
         r"at_once names \['wait'\], which are no arguments"),
    ],
)
def test_a_followed_by_reads_what_the_tool_returns_and_is_refused_at_import(
    registry: Registry, follow: Follow, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        register_work(registry, follow)
    assert len(registry) == 0


def test_a_follow_reads_the_started_result_and_the_end() -> None:
    follow = Follow("follow_work", stop="stop_work", arguments=_WORK)
    assert follow.pending(Started(work_id=3)) and follow.arguments_of(Started(work_id=3)) == {"work_id": 3}
    assert not follow.pending(Outcome(status="done")) and follow.pending(Outcome(status="running"))
    assert follow.ended_well(Outcome(status="done")) and not follow.ended_well(Outcome(status="interrupted"))


def test_the_tools_that_start_work_name_the_tools_that_follow_and_stop_it() -> None:
    """The tools whose work goes on after they return (the CLI waits for it). The others finish
    their work within the call: pull_model, prepare_journal, refresh_feeds, sync_calendar and the
    importers wait for it; mail sent beside an answer is waited for when a Fable closes."""
    load_capabilities()
    followed = {t.name: (t.followed_by.tool, t.followed_by.stop) for t in REGISTRY if t.followed_by is not None}
    answer = ("follow_answer", "stop_answer")
    assert followed == {"send_message": answer, "start_chat": answer, "retry_answer": answer,
                        "resend_message": answer, "research": ("follow_research", "stop_research")}


def test_sync_functions_are_refused(registry: Registry) -> None:
    with pytest.raises(TypeError, match="must be an async function"):

        @tool(group="test", title="Sync", scope="read", registry=registry)
        def sync(note_id: int) -> Echo:
            """Not async."""
            return Echo(id=note_id, text="")


def test_untyped_parameters_are_refused(registry: Registry) -> None:
    with pytest.raises(TypeError, match="parameter 'text' has no type annotation"):

        @tool(group="test", title="Untyped", scope="read", registry=registry)
        async def untyped(ctx: Context, text) -> Echo:  # type: ignore[no-untyped-def]
            """Untyped."""
            return Echo(id=1, text=text)


def test_variadic_parameters_are_refused(registry: Registry) -> None:
    with pytest.raises(TypeError, match="plain keyword parameter"):

        @tool(group="test", title="Variadic", scope="read", registry=registry)
        async def variadic(ctx: Context, **extra: str) -> Echo:
            """Variadic."""
            return Echo(id=1, text="")


def test_results_must_be_pydantic_models(registry: Registry) -> None:
    with pytest.raises(TypeError, match="must return a pydantic model"):

        @tool(group="test", title="Dict", scope="read", registry=registry)
        async def as_dict(ctx: Context) -> dict[str, Any]:
            """Returns a dict."""
            return {}


def test_a_docstring_is_required(registry: Registry) -> None:
    with pytest.raises(ValueError, match="needs a docstring"):

        @tool(group="test", title="Mute", scope="read", registry=registry)
        async def mute(ctx: Context) -> Echo:
            return Echo(id=1, text="")


@pytest.mark.parametrize("name", ["CamelCase", "has-dash", "x", "9lives"])
def test_names_must_be_snake_case(registry: Registry, name: str) -> None:
    with pytest.raises(ValueError, match="snake_case"):
        register_echo(registry, name=name)


def test_scope_must_be_read_or_write(registry: Registry) -> None:
    with pytest.raises(ValueError, match="scope"):
        register_echo(registry, scope="admin")
    assert len(registry) == 0


# --- what a registered tool looks like ------------------------------------------------------------


def test_decorator_returns_the_function_unchanged(registry: Registry) -> None:
    async def plain(ctx: Context) -> Echo:
        """Plain."""
        return Echo(id=1, text="")

    assert tool(group="test", title="Plain", scope="read", registry=registry)(plain) is plain
    assert registry.get("plain") is not None and registry.get("plain").fn is plain  # type: ignore[union-attr]


def test_input_schema_is_flat_and_hides_the_context(registry: Registry) -> None:
    register_echo(registry)
    schema = registry.get("echo").input_schema  # type: ignore[union-attr]
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"note_id", "text"}
    assert schema["required"] == ["note_id"]
    assert "additionalProperties" not in schema  # validation forbids extras; the schema spends no bytes on it
    assert registry.get("echo").signature.arguments.model_config["extra"] == "forbid"  # type: ignore[union-attr]
    assert schema["properties"]["text"]["default"] == "hi"
    assert "title" not in schema["properties"]["note_id"], "auto titles only restate the name"


def test_description_is_the_docstring_before_its_sections(registry: Registry) -> None:
    register_echo(registry)
    assert registry.get("echo").description == (  # type: ignore[union-attr]
        "Echo the text back.\n\nA second paragraph of description."
    )


def test_args_section_describes_the_properties(registry: Registry) -> None:
    register_echo(registry)
    props = registry.get("echo").input_schema["properties"]  # type: ignore[union-attr]
    assert props["note_id"]["description"] == "Which note to echo for."
    assert props["text"]["description"] == "What to say; continued on a second line."


NoteRef = Annotated[int, Field(ge=1, description="Id of the note.")]


def test_types_give_constraints_and_default_descriptions_the_docstring_refines(
    registry: Registry,
) -> None:
    @tool(group="test", title="Constrained", scope="read", registry=registry)
    async def constrained(
        ctx: Context,
        note_id: NoteRef,
        parent_id: NoteRef | None = None,
        limit: Annotated[int, Field(ge=1, le=50, description="Page size.")] = 10,
        kind: Literal["note", "task"] = "note",
    ) -> Echo:
        """Constrained.

        Args:
            parent_id: The parent, specific to this tool.
        """
        return Echo(id=limit, text=kind)

    props = registry.get("constrained").input_schema["properties"]  # type: ignore[union-attr]
    assert props["note_id"] == {"description": "Id of the note.", "minimum": 1, "type": "integer"}
    assert props["parent_id"]["description"] == "The parent, specific to this tool."
    assert props["limit"] == {"default": 10, "description": "Page size.", "maximum": 50,
                              "minimum": 1, "type": "integer"}
    assert props["kind"]["enum"] == ["note", "task"]


def test_output_schema_is_an_object(registry: Registry) -> None:
    register_echo(registry)
    schema = registry.get("echo").output_schema  # type: ignore[union-attr]
    assert schema["type"] == "object"
    assert schema["required"] == ["id", "text"]


def test_read_scope_tools_are_annotated_read_only_and_idempotent(registry: Registry) -> None:
    register_echo(registry)
    t = registry.get("echo")
    assert t is not None and t.scope == "read"
    assert asdict(t.annotations) == {"read_only": True, "destructive": False,
                                     "idempotent": True, "open_world": False}


def test_write_scope_annotations_follow_the_declaration(registry: Registry) -> None:
    @tool(group="test", title="Wipe", scope="write", destructive=True, idempotent=True, open_world=True,
          registry=registry)
    async def wipe(ctx: Context) -> Echo:
        """Wipe."""
        return Echo(id=1, text="")

    @tool(group="test", title="Add", scope="write", registry=registry)
    async def add(ctx: Context) -> Echo:
        """Add."""
        return Echo(id=1, text="")

    assert asdict(registry.get("wipe").annotations) == {  # type: ignore[union-attr]
        "read_only": False, "destructive": True, "idempotent": True, "open_world": True}
    assert asdict(registry.get("add").annotations) == {  # type: ignore[union-attr]
        "read_only": False, "destructive": False, "idempotent": False, "open_world": False}


def test_read_scope_callers_see_only_read_tools(registry: Registry) -> None:
    register_echo(registry)

    @tool(group="test", title="Add", scope="write", registry=registry)
    async def add(ctx: Context) -> Echo:
        """Add."""
        return Echo(id=1, text="")

    reader = Caller(user_id=1, scope="read")
    assert [t.name for t in registry.for_caller(reader)] == ["echo"]
    assert [t.name for t in registry.for_caller(Caller(user_id=1))] == ["echo", "add"]


def test_route_path_params(registry: Registry) -> None:
    assert Route("GET", "/notes/{note_id}/versions/{version}").path_params == ["note_id", "version"]


# --- the real registry --------------------------------------------------------------------------


def registry_snapshot() -> list[dict[str, Any]]:
    load_capabilities()
    return [
        {
            "name": t.name,
            "title": t.title,
            "description": t.description,
            "scope": t.scope,
            "annotations": asdict(t.annotations),
            "route": None if t.route is None else f"{t.route.method} {t.route.path}",
            **({"admin": True} if t.admin else {}),
            **({"needs": sorted(t.needs)} if t.needs else {}),
            **({"followed_by": {"tool": t.followed_by.tool, "stop": t.followed_by.stop,
                                "arguments": dict(t.followed_by.arguments)}} if t.followed_by else {}),
            "input_schema": t.input_schema,
            "output_schema": t.output_schema,
        }
        for t in sorted(REGISTRY, key=lambda t: t.name)
    ]


def test_registry_matches_its_snapshot() -> None:
    assert_json_matches(SNAPSHOT, registry_snapshot(), env_var="UPDATE_SNAPSHOTS",
                        command=".venv/bin/pytest tests/core/test_registry.py", what="the tools clients see")


def test_every_registered_tool_is_complete() -> None:
    load_capabilities()
    assert len(REGISTRY) > 0
    for t in REGISTRY:
        assert t.title and t.description, t.name
        assert len(t.description) < 2000, f"{t.name}: its description floods an agent's context"
        assert t.input_schema["type"] == "object" and t.output_schema["type"] == "object", t.name
        assert t.signature.arguments.model_config["extra"] == "forbid", t.name
        assert not {"ctx", "context"} & set(t.input_schema.get("properties", {})), t.name


def test_optional_values_are_written_as_type_lists_but_optional_enums_keep_any_of() -> None:
    from fable_core.tools._schema import _clean

    class Shapes(BaseModel):
        count: int | None = None
        day: date | None = None
        names: list[str] | None = None
        mode: Literal["a", "b"] | None = None

    props = _clean(Shapes.model_json_schema())["properties"]
    assert props["count"] == {"type": ["integer", "null"], "default": None}
    assert props["day"] == {"type": ["string", "null"], "format": "date", "default": None}
    assert props["names"] == {"type": ["array", "null"], "items": {"type": "string"}, "default": None}
    assert [b.get("type") for b in props["mode"]["anyOf"]] == ["string", "null"]  # enum: null is not in it


def test_advertised_argument_schemas_say_only_what_a_caller_cannot_infer() -> None:
    from fable_core.tools._schema import _advertised, _clean, _inline_refs

    class Item(BaseModel):
        title: str
        note: str | None = None

    class Arguments(BaseModel):
        note_id: Annotated[int, Field(ge=1, le=2**31 - 1)]
        count: int | None = None
        mode: Literal["a", "b"] | None = None
        due: date | None = "unset"  # type: ignore[assignment]  # null means "clear it": it stays
        body: Annotated[str, Field(max_length=1_000_000)] = ""
        title: Annotated[str, Field(max_length=300)] = "x"
        confirm: bool = False
        tags: list[str] = []
        items: list[Item] = []

    props = _advertised(_clean(_inline_refs(Arguments.model_json_schema())))["properties"]
    assert props["note_id"] == {"type": "integer"}  # an id's 32-bit bounds are validation's business
    assert props["count"] == {"type": "integer"}  # omitted says what null says
    assert props["mode"] == {"enum": ["a", "b"], "type": "string"}
    assert props["due"] == {"type": ["string", "null"], "format": "date", "default": "unset"}
    assert props["body"] == {"type": "string"} and props["title"] == {"type": "string", "maxLength": 300,
                                                                       "default": "x"}
    assert props["confirm"] == {"type": "boolean"} and props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["items"]["items"] == {"type": "object", "properties": {"title": {"type": "string"},
                                                                        "note": {"type": "string"}},
                                       "required": ["title"]}  # a property named title is not a title


def test_the_registry_is_in_capability_order_whatever_the_import_order() -> None:
    """The order every surface lists tools in is CAPABILITIES', not the order modules were
    first imported in (a test importing assist before notes must not reorder tools/list)."""
    from fable_core.capabilities import CAPABILITIES, module_rank

    load_capabilities()
    modules = [t.module for t in REGISTRY]
    assert modules == sorted(modules, key=module_rank)
    listed = [m for c in CAPABILITIES for m in c.modules]
    assert list(dict.fromkeys(modules)) == listed


def test_a_route_carries_its_success_status() -> None:
    load_capabilities()
    statuses = {t.name: t.route.status for t in REGISTRY if t.route is not None}
    assert statuses["create_conversation"] == 201 and statuses["send_message"] == 202
    assert statuses["read_note"] == 200
