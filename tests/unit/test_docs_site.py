"""The docs hold: the site builds with no warning, the README renders as a page (every table row a
row) and its links resolve, no doc cites a file outside the repository, the README lists every exit
code, every `python run.py` command in the README and the docs parses as written and names config files
that exist (the shell blocks' commands also run: tests/integration/test_docs_commands.py)."""

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

# what the site renders with (mkdocs.yml `markdown_extensions`), less the highlighting that needs no check
MARKDOWN_EXTENSIONS = ["tables", "attr_list", "toc", "pymdownx.superfences"]
SEPARATOR_ROW = re.compile(r"\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?")

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


def _rendered_tables(text: str) -> tuple[int, int, list[str]]:
    """(table row lines in the Markdown, rows in the HTML, rendered text lines that start with a raw `|`)."""
    import markdown

    source = [line for line in FENCE.sub("", text).splitlines()
              if line.lstrip().startswith("|") and not SEPARATOR_ROW.fullmatch(line.strip())]
    page = markdown.markdown(text, extensions=MARKDOWN_EXTENSIONS)
    prose = re.sub(r"<(pre|code)\b[^>]*>.*?</\1>", "", page, flags=re.S)
    raw = [line for line in re.sub(r"<[^>]+>", "\n", prose).splitlines() if line.strip().startswith("|")]
    return len(source), len(re.findall(r"<tr>", page)), raw


def test_the_readme_renders_as_a_page():
    rows, rendered, raw = _rendered_tables((ROOT / "README.md").read_text(encoding="utf-8"))
    assert rows >= 16, "the Read on table"
    assert not raw and rendered == rows, f"{rows - rendered} table row(s) render as raw pipes: {raw[:3]}"


def test_a_paragraph_inside_a_table_is_caught():
    broken = "| a | b |\n|---|---|\n| 1 | 2 |\n\nA paragraph.\n| 3 | 4 |\n| 5 | 6 |\n"
    rows, rendered, raw = _rendered_tables(broken)
    assert rows == 4 and rendered == 2 and raw


@pytest.mark.parametrize("page", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_docs_page_renders_its_tables(page):
    rows, rendered, raw = _rendered_tables(page.read_text(encoding="utf-8"))
    assert not raw and rendered == rows, f"{page}: {rows - rendered} table row(s) render as raw pipes: {raw[:3]}"


def test_no_doc_cites_a_file_outside_the_repository():
    tracked = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True)
    docs = {ROOT / name for name in tracked.stdout.split()} | set(DOC_FILES)
    outside = re.compile(r"\.\./shared\b|/work/shared\b")
    cited = [f"{page.relative_to(ROOT)}:{n}" for page in sorted(docs) if page.is_file()
             for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1) if outside.search(line)]
    assert not cited, f"a file outside the repository is cited (name a repository path, or drop it): {cited}"


def test_the_readme_lists_every_exit_code():
    from ragwatch_zenml import cli as run

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    codes = {int(c) for c in re.findall(r"\b(\d) (?:success|the gate|bad input|could not evaluate)",
                                        " ".join(run.__doc__.split()))}
    assert codes == {0, 1, 2, 3}, "run.py's docstring lists the exit codes"
    listed = re.search(r"Exit codes: (.*?)\(\[Comparison, gate and CI\]", readme)
    assert listed is not None, "the README lists the exit codes before its link to the gate page"
    for code, meaning in ((0, "promoted"), (1, "not promoted"), (2, "bad input or config"), (3, "could not evaluate")):
        assert f"{code} {meaning}" in listed.group(1).replace("a bad", "bad"), f"exit code {code} ({meaning})"


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
    from ragwatch_zenml import cli as run

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
