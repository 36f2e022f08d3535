"""Run every ```python block of README.md and docs/**/*.md, in order, one namespace per file.

Top-level ``await`` is allowed. A block opened with ``{.python .skip}`` (shown as Python,
not run) is left out. (``python skip`` would not do: the docs' Markdown takes such a fence
for plain text, so a test refuses it.)
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S
)


def doc_files() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [f for f in files if f.is_file()]


def fence_words(info: str) -> list[str]:
    """The language and classes of a fence's info string: ``{.python .skip}`` is both."""
    info = info.strip()
    if info.startswith("{") and info.endswith("}"):
        return [word.removeprefix(".") for word in info[1:-1].split()]
    return info.split()


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """The ```python blocks of ``path`` as (line number, dedented source), skips left out."""
    text = path.read_text(encoding="utf-8")
    blocks: list[tuple[int, str]] = []
    for match in FENCE.finditer(text):
        info = fence_words(match["info"])
        if not info or info[0] != "python" or "skip" in info[1:]:
            continue
        indent = len(match["indent"])
        body = "\n".join(line[indent:] for line in match["body"].splitlines())
        line = text.count("\n", 0, match.start()) + 2
        blocks.append((line, body))
    return blocks


async def run_blocks(path: Path, blocks: list[tuple[int, str]]) -> None:
    """Execute ``blocks`` in one shared namespace, awaiting top-level ``await``s.

    The namespace is a module's, in ``sys.modules`` while the page runs, as a user's would be
    (a dataclass looks its module up there).
    """
    page = types.ModuleType(f"doc_{path.stem.replace('-', '_')}")
    sys.modules[page.__name__] = page
    try:
        for line, source in blocks:
            padded = "\n" * (line - 1) + source
            code = compile(padded, str(path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(code, page.__dict__)
            if inspect.isawaitable(result):
                await result
    finally:
        del sys.modules[page.__name__]


@pytest.mark.parametrize(
    "path",
    [p for p in doc_files() if python_blocks(p)],
    ids=lambda p: str(p.relative_to(ROOT)).replace("/", ":"),
)
def test_doc_examples_run(path: Path) -> None:
    """Every Python example on the page runs and its asserts hold."""
    asyncio.run(run_blocks(path, python_blocks(path)))


def test_docs_have_examples() -> None:
    """The extractor finds the examples (guards against a broken fence pattern)."""
    assert sum(len(python_blocks(p)) for p in doc_files()) >= 10


def test_no_fence_has_bare_words_after_its_language() -> None:
    """A fence like ``python skip`` renders as plain text in the docs: use ``{.python .skip}``."""
    bad = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}: {match['info']}"
        for path in doc_files()
        for text in [path.read_text(encoding="utf-8")]
        for match in FENCE.finditer(text)
        if len(match["info"].split()) > 1 and not match["info"].strip().startswith("{")
    ]
    assert bad == []
