"""alice's world for the permission matrix: people at every permission, and rows of hers
shared with them or with no one."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Any

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["LEVEL", "PRIVATE", "ROLES", "SHARED", "People", "World", "build_world"]

# Who calls, and what alice's shared project is to them (0: nothing)
ROLES = ("owner", "admin", "editor", "member", "viewer", "ex_member", "revoked", "stranger")
LEVEL = {"owner": 4, "admin": 3, "editor": 2, "member": 2, "viewer": 1, "ex_member": 0, "revoked": 0, "stranger": 0}
PRIVATE = "PRIVATE"  # in every title of alice's that no one else may ever see
SHARED = "Shared roof"  # the title of the shared task
_WORLDS = count(1)


@dataclass
class People:
    callers: dict[str, Caller]
    keys: dict[str, str]
    group_id: int
    conversations: dict[str, int]
    events: dict[str, int]  # each person's own event


@dataclass
class World:
    """alice's rows: a project shared at every permission (its milestone, a task with versions
    and a work log, a note), and a project and a note shared with no one."""

    rows: dict[str, int] = field(default_factory=dict)


async def build_world(fable: Fable, people: People) -> World:
    """A fresh world (alice's earlier ones stay; titles carry a number to stay distinct)."""
    world = World()
    alice = people.callers["owner"]
    n = next(_WORLDS)
    call: Any = lambda name, **args: fable.call(name, args, alice)  # noqa: E731
    project = await call("create_project", title=f"House {n}")
    milestone = await call("create_milestone", project_id=project["id"], title="Spring")
    parent = await call("create_note", title=f"Plans {n}", body="the plans", project_id=project["id"])
    task = await call("create_note", title=f"{SHARED} {n}", body=f"tiles [[Plans {n}]]",
                      status="todo", due_date="2026-12-01", project_id=project["id"],
                      milestone_id=milestone["id"], parent_id=parent["id"], tags=["house"])
    await call("update_note", note_id=task["id"], body=f"tiles v2 [[Plans {n}]]")
    log = await call("log_work", note_id=task["id"], minutes=30)
    diary = await call("create_note", title=f"{PRIVATE} diary {n}", body=f"[[Plans {n}]] secret", tags=["private"])
    await call("create_project", title=f"{PRIVATE} project {n}")
    shares = {}
    for role, permission in (("viewer", "viewer"), ("editor", "editor"), ("admin", "admin"), ("revoked", "viewer")):
        shares[role] = (await call("share", project_id=project["id"], with_user=people.callers[role].username,
                                   permission=permission))["id"]
    await call("share", project_id=project["id"], with_group="Household", permission="editor")
    await call("unshare", share_id=shares["revoked"])
    world.rows = {"project": project["id"], "milestone": milestone["id"], "note": task["id"],
                  "parent": parent["id"], "log": log["id"], "share": shares["viewer"], "diary": diary["id"]}
    return world
