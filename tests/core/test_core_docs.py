"""The documentation stays true: every setting documented, the README starts with the two commands."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from support.snapshots import assert_matches

from fable_core.config import Settings, settings_table
from fable_web.cli import _parser

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_is_documented_in_configuration_md() -> None:
    documented = set(re.findall(r"^\| `([A-Z0-9_]+)` \|", (ROOT / "docs/configuration.md").read_text(), re.MULTILINE))
    expected = {name.upper() for name in Settings.model_fields}
    assert expected - documented == set(), "undocumented settings"
    assert documented - expected == set(), "documented settings that do not exist"


def test_the_configuration_table_is_the_settings() -> None:
    """docs/configuration.md's table is generated from Settings: after changing a setting, run
    ``UPDATE_DOCS=1 .venv/bin/pytest tests/core/test_core_docs.py``."""
    assert_matches(ROOT / "docs/configuration.md", settings_table() + "\n",
                   section=r"^\| Variable \| Default \| Meaning \|\n(?:\|.*\|\n)+", env_var="UPDATE_DOCS",
                   command=".venv/bin/pytest tests/core/test_core_docs.py", what="the settings table")


def test_every_setting_has_a_description() -> None:
    missing = [name for name, field in Settings.model_fields.items() if not field.description]
    assert missing == []


def test_readme_begins_with_make_serve_and_make_test() -> None:
    readme = (ROOT / "README.md").read_text()
    first_block = re.search(r"```\w*\n(.*?)```", readme, re.DOTALL)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands[:2] == ["make serve", "make test"]
    assert readme.index("```") < readme.index("Fable is"), "the commands come first"


def test_makefile_has_the_two_commands_and_bench() -> None:
    targets = set(re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    assert {"serve", "test", "bench"} <= targets


def test_docs_linked_from_the_readme_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+)\)", readme)
    assert links, "the README links the docs"
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_the_readmes_fable_commands_are_ones_the_cli_accepts() -> None:
    """Each ``fable ...`` line of the README's command-line block parses (a renamed command or
    option fails here, not in a reader's shell)."""
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("## The command line"):].split("```")[1]
    lines = [line.split("  #")[0] for line in block.splitlines() if ".venv/bin/fable " in line]
    assert len(lines) >= 8
    for line in lines:
        argv = shlex.split(line.split(".venv/bin/fable ", 1)[1])
        _parser().parse_args(argv)  # exits (status 2) on anything it does not know
