"""The documentation site (mkdocs.yml, docs/) and the README that points at it: the generated
references are what the code generates now, the build is strict, every page is in the nav, and
the README stays a short landing page whose links lead somewhere.

A new option or CLI flag without `make docs` fails here (and in test_option_table.py), before
a reader meets a reference that no longer says what the code does."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from spark_kafka_wire.cli import reference as cli_reference
from tests.support.docs_pages import DOCS, README, ROOT, page

CLI_REFERENCE = page("reference/cli.md")


def _config() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def _nav_pages(nav: list) -> list[str]:
    out: list[str] = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            out.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return out


def test_cli_reference_is_what_the_commands_generate() -> None:
    assert CLI_REFERENCE.read_text(encoding="utf-8") == cli_reference.reference_page(), (
        "docs/reference/cli.md differs from the click commands: run `make docs`")


def test_cli_reference_lists_every_command_and_option() -> None:
    """Every command of the tree, subcommands included, has a section with each of its
    options, so the walk cannot skip a group's commands."""
    import click

    from spark_kafka_wire.cli import cli

    text = cli_reference.reference_page()

    def visit(command: click.Command, ctx: click.Context) -> None:
        assert f"`{ctx.command_path}`\n" in text, ctx.command_path
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.opts[-1] in text, (ctx.command_path, param.opts)
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                visit(sub, click.Context(sub, info_name=name, parent=ctx))

    visit(cli, click.Context(cli, info_name="kafkawire"))
    assert "### `kafkawire topics create`" in text


def test_cli_reference_check_and_rewrite(tmp_path: Path) -> None:
    stale = tmp_path / "cli.md"
    stale.write_text(CLI_REFERENCE.read_text().replace("--partitions", "--parts"))
    assert cli_reference.main(["--check", str(stale)]) == 1
    assert "--parts" in stale.read_text()
    assert cli_reference.main([str(stale)]) == 0
    assert stale.read_text() == CLI_REFERENCE.read_text()


def test_the_build_is_strict_and_fails_on_broken_links_and_anchors() -> None:
    config = _config()
    assert config["strict"] is True
    assert config["theme"]["name"] == "material"
    assert config["site_dir"] == "site"
    links = config["validation"]["links"]
    assert links["not_found"] == links["anchors"] == "warn"  # strict turns warnings into errors
    assert config["validation"]["nav"]["omitted_files"] == "warn"


def test_every_page_is_in_the_nav_once_and_in_the_issues_order() -> None:
    nav = _nav_pages(_config()["nav"])
    on_disk = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav) == on_disk
    assert len(nav) == len(set(nav))
    order = ["getting-started.md", "reading.md", "streaming.md", "writing.md", "exactly-once.md",
             "security.md", "reference/cli.md", "reference/options.md", "compatibility.md",
             "benchmarks.md", "reliability.md", "architecture.md"]
    assert [p for p in nav if p in order] == order


def test_make_docs_regenerates_the_references_then_builds_strictly() -> None:
    from tests.unit.test_architecture import _make_recipe

    recipe = _make_recipe("docs")
    build = next(i for i, line in enumerate(recipe) if "mkdocs build" in line)
    assert any("-m spark_kafka_wire.options.reference docs/reference/options.md" in line
               for line in recipe[:build]), recipe
    assert any("-m spark_kafka_wire.cli.reference docs/reference/cli.md" in line
               for line in recipe[:build]), recipe
    assert "--strict" in recipe[build] and " -q" not in recipe[build], recipe[build]
    assert "site/" in (ROOT / ".gitignore").read_text().split()


def test_the_venv_installs_the_docs_extra() -> None:
    """CI starts from a fresh clone: MkDocs comes from pyproject's [docs] extra, which the
    Makefile's venv installs, never from a hand-made install."""
    makefile = (ROOT / "Makefile").read_text()
    assert "-e '.[test,docs]'" in makefile
    pyproject = (ROOT / "pyproject.toml").read_text()
    extra = pyproject.split("\ndocs = [", 1)[1].split("]", 1)[0]
    assert "mkdocs-material" in extra and "mkdocs>=" in extra, extra


def test_architecture_page_includes_architecture_md() -> None:
    """ARCHITECTURE.md stays at the top (tests read it); the site includes it when built."""
    text = page("architecture.md").read_text()
    assert '--8<-- "ARCHITECTURE.md:2:"' in text
    assert (ROOT / "ARCHITECTURE.md").read_text().startswith("# Architecture\n")


def test_readme_is_a_short_landing_page_whose_links_exist() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 100
    for needed in ("pip install spark-kafka-wire", "`make demo`", "`make test`", "`make docs`",
                   "<!-- example:landing -->"):
        assert needed in text, needed
    example = text.split("<!-- example:landing -->\n```python\n", 1)[1].split("\n```", 1)[0]
    assert len(example.splitlines()) <= 12, example  # the ~10-line example the issue asks for
    compile(example, "README.md", "exec")  # tests/spark/test_readme_examples.py runs it
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert targets
    for target in targets:
        assert (ROOT / target).exists(), target
    linked = {t for t in targets if t.startswith("docs/")}
    for required in ("getting-started", "reading", "streaming", "writing", "exactly-once",
                     "security", "reference/cli", "reference/options", "compatibility",
                     "benchmarks", "reliability", "architecture"):
        assert f"docs/{required}.md" in linked, required


def test_code_points_at_the_docs_not_at_readme_sections() -> None:
    """Messages and docstrings that sent a reader to a README section now name the page the
    section moved to; the README no longer has those sections."""
    for path in sorted((ROOT / "spark_kafka_wire").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            assert "README" not in line, f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
