"""The README is a front door (at most 12 KB) and every relative link in it and in docs/ leads somewhere.

Links are markdown links `[text](target)` outside code; a target with a scheme (https:, mailto:)
is not checked here. A relative target must name a file of the repository; its `#anchor`, when it
has one, must be a heading of that file (GitHub's slugs: lower case, punctuation dropped, spaces
to hyphens). Paths to docs/ named in the Makefile's and tools' messages must exist too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text without fenced code blocks and inline code spans."""
    text = re.sub(r"(?ms)^```.*?^```", "", text)
    return re.sub(r"`[^`\n]*`", "", text)


def _slug(heading: str) -> str:
    heading = re.sub(r"`", "", heading.strip().lower())
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", path.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6} (.+)$", text)}


def test_the_readme_is_a_front_door():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= 12 * 1024, f"README.md is {size} bytes; at most 12 KB: move the details to docs/"
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for must in (
        "make lab",
        "make test",
        "## Start here",
        "**Students.**",
        "**Instructors.**",
        "## Syllabus",
        "same OS user",
        "make hub",
        "docs/students.md",
        "docs/instructors.md",
        "docs/maintainers.md",
        "docs/translators.md",
    ):
        assert must in text, f"README.md should have {must!r}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    bad = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no such file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: {dest.name} has no heading #{anchor}")
    assert not bad, f"{page.relative_to(ROOT)}: broken links:\n  " + "\n  ".join(bad)


def test_docs_named_by_the_makefile_and_tools_exist():
    named = set()
    for source in [ROOT / "Makefile", *(ROOT / "tools").glob("*.py"), *(ROOT / "autograder").rglob("*.py")]:
        named |= set(re.findall(r"docs/[A-Za-z0-9_.-]+\.md", source.read_text(encoding="utf-8")))
    missing = sorted(n for n in named if not (ROOT / n).is_file())
    assert named and not missing, f"named but missing: {missing}"


def sudo_without_root_form(text: str) -> list[str]:
    """Each `sudo make X` with no `make X` for root (and the word root) within 300 characters of it."""
    missing = []
    for m in re.finditer(r"sudo (make [\w-]+)", text):
        near = text[max(0, m.start() - 300) : m.end() + 300]
        plain = re.search(rf"(?<!sudo )(?<![\w-]){re.escape(m.group(1))}(?![\w-])", near)
        if not (plain and "root" in near):
            missing.append(m.group(0))
    return missing


def test_every_sudo_command_also_works_without_sudo_as_root():
    """A minimal image run as root has no `sudo`: wherever the docs or messages say `sudo make X`, they also
    give `make X` as the command for root, next to it."""
    texts = {p.name: p.read_text() for p in PAGES}
    texts["Makefile"] = (ROOT / "Makefile").read_text()
    texts["hub/server.py"] = (ROOT / "hub" / "server.py").read_text()
    for name, text in texts.items():
        assert not sudo_without_root_form(text), f"{name}: {sudo_without_root_form(text)}"
    assert sudo_without_root_form("run `sudo make hub ROSTER=x` then `make hub-clean`") == ["sudo make hub"]


def test_files_the_docs_examples_write_into_the_checkout_are_ignored_by_git():
    """Following docs/instructors.md (`printf ... > students.csv`) must not leave an untracked file, least of all
    a roster of real names: what an example writes with `>` into the checkout is git-ignored."""
    import subprocess

    written = set()
    for page in PAGES:
        for block in re.findall(r"(?ms)^```(?:bash|sh)\n(.*?)^```", page.read_text()):
            commands = "\n".join(line.split(" #")[0] for line in block.splitlines())  # comments say "-> x" too
            written |= {m for m in re.findall(r"(?<![<>2&-])>\s*([\w./-]+)", commands) if not m.startswith("/")}
    assert "students.csv" in written, written
    for path in sorted(written):
        ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT).returncode == 0
        assert ignored, f"the docs' examples write {path} into the checkout, and git does not ignore it"


def test_make_help_lists_every_target_from_its_own_comment():
    """`make help` is generated from the targets' `##` comments: every target has one, and help shows them all."""
    import subprocess

    make = (ROOT / "Makefile").read_text()
    phony = {name for line in re.findall(r"^\.PHONY: (.*)$", make, re.M) for name in line.split()}
    targets = set(re.findall(r"^([a-z][a-z-]*):", make, re.M))
    assert phony == targets, f"targets and .PHONY differ: {sorted(phony ^ targets)}"
    out = subprocess.run(["make", "--no-print-directory", "help"], cwd=ROOT, capture_output=True, text=True).stdout
    listed = set(re.findall(r"^make ([a-z-]+)  ", out, re.M))
    assert listed == targets, f"targets without a `##` comment: {sorted(targets - listed)}"
