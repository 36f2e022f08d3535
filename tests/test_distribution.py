"""The distribution name: fncore installs as ``fncore-agents`` and imports as ``fncore``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from fncore._distribution import DISTRIBUTION, install_hint

ROOT = Path(__file__).resolve().parent.parent
# `pip install` followed by a requirement that names a distribution: fncore, fncore[...],
# "fncore[...]" or 'fncore[...]'. `pip install -e .` and other packages do not match.
_BARE_NAME = re.compile(r"""pip install\s+(?:-\S+\s+)*["']?fncore(?![\w-])""")


def test_pyproject_uses_the_distribution_name() -> None:
    """The project, and the extras that name the project itself, use the one name."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    assert project["name"] == DISTRIBUTION
    assert DISTRIBUTION != "fncore"  # the index's `fncore` is an unrelated project
    own = [
        requirement
        for requirements in project["optional-dependencies"].values()
        for requirement in requirements
        if requirement.startswith("fncore")
    ]
    assert own
    assert all(requirement.startswith(f"{DISTRIBUTION}[") for requirement in own)


def test_install_hints_name_the_distribution() -> None:
    """Error messages tell users to install this project, not the unrelated `fncore`."""
    assert install_hint("mcp") == "pip install 'fncore-agents[mcp]'"


def test_no_document_installs_the_unrelated_fncore() -> None:
    """README, CONTRIBUTING, docs and sources never say `pip install fncore`."""
    documents = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    documents += sorted((ROOT / "docs").rglob("*.md"))
    documents += sorted((ROOT / "fncore").rglob("*.py"))
    offenders = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in documents
        for match in _BARE_NAME.finditer(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_docs_site_links_no_repository_that_does_not_exist() -> None:
    """mkdocs.yml names no repository: the project has no public one yet."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "repo_url" not in config
