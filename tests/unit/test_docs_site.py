"""The docs hold: the site builds with no warning, the README's links resolve, every `python run.py`
command in the README and the docs parses as written and names config files that exist (the shell
blocks' commands also run: tests/integration/test_docs_commands.py)."""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from tests.doc_commands import DOC_FILES, FENCE, ROOT

COMMAND = re.compile(r"(?:\.venv/bin/)?python run\.py\b[^&;|#`\n]*")
SYNOPSIS = ("[", "|", "<", "...", "…")  # an inline command with these documents syntax, not a run
PATH_OPTIONS = ("--config", "--zenml-config")


def _mkdocs(site_dir: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site_dir)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_site_builds_strict_with_no_warning(tmp_path):
    result = _mkdocs(tmp_path / "site", ROOT)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "WARNING" not in output, output
    assert (tmp_path / "site" / "your-system" / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path):
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    with (tmp_path / "docs" / "index.md").open("a") as page:
        page.write("\nSee [the missing page](no-such-page.md) and [an anchor](gate.md#no-such-anchor).\n")
    result = _mkdocs(tmp_path / "site", tmp_path)
    assert result.returncode != 0
    assert "no-such-page.md" in result.stdout + result.stderr and "no-such-anchor" in result.stdout + result.stderr


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    text = FENCE.sub("", text)
    headings = re.findall(r"^#{1,6} (.+)$", text, re.M)
    ids = {slugify(re.sub(r"[`*]", "", h).strip(), "-") for h in headings}
    return ids | set(re.findall(r'<a id="([^"]+)"', text))


def test_every_readme_link_resolves():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", FENCE.sub("", readme))
    assert len(links) >= 10
    for link in links:
        if link.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else ROOT / "README.md"
        assert target.exists(), f"README links to {link}: {target} does not exist"
        if anchor:
            assert anchor in _anchors(target), f"README links to {link}: no heading or id {anchor!r} there"


def test_the_readme_is_a_map():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    first_block = FENCE.search(readme).group(2)
    assert first_block.splitlines()[0].startswith("make run") and first_block.splitlines()[1].startswith("make test")


def test_the_readme_config_is_the_example_that_works_as_written():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = next(body for lang, body in FENCE.findall(readme) if lang.strip() == "yaml")
    example = (ROOT / "docs" / "examples" / "ragwatch.yaml").read_text(encoding="utf-8")
    body = "\n".join(line for line in example.splitlines() if not line.startswith("#")) + "\n"
    assert shown == body, "README's config differs from docs/examples/ragwatch.yaml: show the file as it is"


def _commands() -> list[tuple[str, str]]:
    """(where, command) for every `python run.py ...` of the README and the docs."""
    found = []
    for file in DOC_FILES:
        text = file.read_text(encoding="utf-8")
        where = str(file.relative_to(ROOT))
        for lang, body in FENCE.findall(text):
            if lang.strip() in ("bash", "sh", "shell", "console", ""):
                for line in body.replace("\\\n", " ").splitlines():
                    found += [(where, m.group(0).strip()) for m in COMMAND.finditer(line)]
        for span in re.findall(r"`([^`]+)`", FENCE.sub("", text)):
            span = " ".join(span.split())  # a command may wrap inside its code span
            if not any(s in span for s in SYNOPSIS):
                found += [(where, m.group(0).strip()) for m in COMMAND.finditer(span)]
    return found


def test_commands_are_found_in_the_readme_and_the_docs():
    where = {w for w, _ in _commands()}
    assert "README.md" in where and "docs/your-system.md" in where and len(_commands()) >= 20


@pytest.mark.parametrize(("where", "command"), _commands())
def test_each_command_parses_and_names_existing_configs(where, command, capsys):
    import run

    args = shlex.split(command)[2:]
    try:
        run.build_parser().parse_args(args)
    except SystemExit as exc:
        assert exc.code == 0, f"{where}: `{command}` does not parse: {capsys.readouterr().err}"
    for option, value in itertools.pairwise(args):
        if option in PATH_OPTIONS:
            assert (ROOT / value).exists(), f"{where}: `{command}` names {value}, which does not exist"


def test_runnable_python_examples_are_marked_and_compile():
    for file in DOC_FILES:
        text = file.read_text(encoding="utf-8")
        assert "```python exec" not in text, f"{file}: mark runnable examples ```python {{.exec}}"
        for lang, body in FENCE.findall(text):
            if lang.strip() == "python {.exec}":
                compile(body, f"{file}:exec", "exec")
