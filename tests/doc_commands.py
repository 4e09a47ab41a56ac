"""The shell commands the README and the docs show, as a reader would copy them.

A command is a line of a fenced ```` ```bash ```` (or sh, shell, console) block: backslash continuations
joined, a trailing `# comment` and a console's `$ ` prompt removed, the rest kept as written (`&&`,
`&`, quotes). An unlabelled block that holds a command is reported by `unlabelled_command_blocks`,
so no command hides from the test that runs them (tests/integration/test_docs_commands.py).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.S | re.M)
SHELL_LANGS = ("bash", "sh", "shell", "console")
# what a command line of an unlabelled block starts with (its output lines start with none of these)
COMMAND_START = re.compile(
    r"^\s*(\$ )?(python|\.venv/|make |curl |scripts/\S+\.(?:sh|py)\b|eval |pip |docker |\.phoenix-venv/)")


def _strip_comment(line: str) -> str:
    """`line` without a trailing `# comment` (a `#` that starts a word outside quotes)."""
    for match in re.finditer(r"(?:^|\s)#", line):
        before = line[: match.start()]
        try:
            shlex.split(before)
        except ValueError:  # inside an open quote: not a comment
            continue
        return before.rstrip()
    return line.rstrip()


def block_commands(body: str) -> list[str]:
    """The commands of one shell block, in order."""
    commands = []
    for line in body.replace("\\\n", " ").splitlines():
        line = _strip_comment(line.strip().removeprefix("$ "))
        if line:
            commands.append(line)
    return commands


def fenced_commands(files: list[Path] = DOC_FILES) -> list[tuple[str, str]]:
    """(file relative to the project, command) for every command of a shell block, in document order."""
    found = []
    for file in files:
        where = str(file.relative_to(ROOT))
        for lang, body in FENCE.findall(file.read_text(encoding="utf-8")):
            if lang.strip().split(" ")[0] in SHELL_LANGS:
                found += [(where, command) for command in block_commands(body)]
    return found


def unlabelled_command_blocks(files: list[Path] = DOC_FILES) -> list[tuple[str, str]]:
    """(file, first command line) of every unlabelled block that holds a command: label it ```bash."""
    found = []
    for file in files:
        for lang, body in FENCE.findall(file.read_text(encoding="utf-8")):
            lines = [line for line in body.splitlines() if COMMAND_START.match(line)]
            if not lang.strip() and lines:
                found.append((str(file.relative_to(ROOT)), lines[0].strip()))
    return found
