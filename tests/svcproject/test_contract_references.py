"""Every "contract §N" cited in the code and docs points at a section of docs/contract.md, and no
reference to a spec outside the repository is left (issue 20, acceptance 4)."""

from __future__ import annotations

import re
import subprocess

from harness.daemon import ROOT

CITED = re.compile(r"contract §(\d+)")
HEADING = re.compile(r"^## §(\d+) ", re.MULTILINE)


def tracked_text_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    wanted = (".py", ".md", ".html", ".js", ".css", "Makefile")
    return [p for p in listed if p.endswith(wanted) and not p.startswith("tests/fixtures/")]


def test_every_cited_section_exists_in_the_contract() -> None:
    sections = set(HEADING.findall((ROOT / "docs" / "contract.md").read_text()))
    assert sections >= {str(n) for n in range(17)}
    cited: dict[str, set[str]] = {}
    for path in tracked_text_files():
        for number in CITED.findall((ROOT / path).read_text(errors="replace")):
            cited.setdefault(number, set()).add(path)
    assert cited, "no contract references found: the search itself is broken"
    missing = {n: sorted(paths) for n, paths in cited.items() if n not in sections}
    assert missing == {}


def test_no_reference_to_a_spec_outside_the_repository_is_left() -> None:
    stale = [
        path
        for path in tracked_text_files()
        if re.search(r"\bSPEC §", (ROOT / path).read_text(errors="replace"))
    ]
    assert stale == []
