"""README.md is a front door a newcomer reads in minutes and docs/*.md is the reference: the README
stays short and holds the two commands; no line of either is a wall of text; no reference a reader
cannot follow (issue numbers, spec sections); no link leaves the repository and every link lands
on a file that exists; docs/layout.md names every module and no path that is not in the tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 150
MAX_LINE = 400
LAYOUT = ROOT / "docs" / "layout.md"
MODULE_FOLDERS = ("plugins/sweep_core", "plugins/sweep_operators")
DAG_FOLDER = "dags"

_FENCE = re.compile(r"^ *(```|~~~).*?^ *\1 *$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
_BARE_URL = re.compile(r"\b(?:https?|ftp)://|\bwww\.[a-z0-9-]+\.", re.I)
_UP_PATH = re.compile(r"(?<![\w.])((?:\.\./)+[\w.\-]+(?:/[\w.\-]+)*)")
_UNFOLLOWABLE = re.compile(r"\bissues?[ -]?#?\d+|\bspec\s*§", re.I)


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def _prose(text: str) -> str:
    """``text`` without fenced code blocks and inline code spans (line breaks kept)."""
    return _CODE_SPAN.sub(_blank, _FENCE.sub(_blank, text))


def link_targets(text: str) -> list[str]:
    """Every markdown link, image and reference-definition target outside code."""
    prose = _prose(text)
    return _LINK.findall(prose) + _REF_DEF.findall(prose)


def _inside(path: Path, root: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


def link_problems(page: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with ``page``'s links: outside the repository, or pointing at nothing. A path
    written as code that climbs out of the repository (``../shared/…``) counts as such a link."""
    text = page.read_text(encoding="utf-8")
    outside = [m.group(1) for m in _UP_PATH.finditer(text) if not _inside(page.parent / m.group(1), root)]
    problems = [f"path outside the repository: {path}" for path in outside]
    outside_links = _REF_DEF.sub("", _LINK.sub("", _prose(text)))
    problems += [f"bare URL: {m.group(0)!r}" for m in _BARE_URL.finditer(outside_links)]
    for target in link_targets(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            problems.append(f"link leaves the repository: {target}")
            continue
        path = target.split("#", 1)[0]
        if not path:
            continue  # an anchor on the same page
        resolved = (root / path.lstrip("/")) if path.startswith("/") else (page.parent / path)
        if not _inside(resolved, root):
            problems.append(f"link leaves the repository: {target}")
        elif not resolved.resolve().exists():
            problems.append(f"link to a file that does not exist: {target}")
    return problems


def unfollowable(text: str) -> list[str]:
    """Lines naming an issue number or a spec section: references a reader of the repo cannot follow."""
    return [f"{n}: {line.strip()[:120]}" for n, line in enumerate(text.split("\n"), 1) if _UNFOLLOWABLE.search(line)]


_HEADING = re.compile(r"^#+ +(.*)$")
_ITEM = re.compile(r"^( *)[-*+] +(.*)$")
_SPAN = re.compile(r"`([^`]+)`")
_FOLDER_OPENER = re.compile(r"^`([\w.\-/]+)/`")
_NAME = re.compile(r"^[\w.\-]+(?:/[\w.\-]+)*/?$")


def layout_modules(root: Path = ROOT) -> set[str]:
    """Every module the layout must name, as a path from ``root`` without ``.py``: each ``.py``
    but ``__init__.py`` under the two packages, and the DAG files in ``dags/``."""
    files = [p for folder in MODULE_FOLDERS for p in (root / folder).rglob("*.py")]
    files += list((root / DAG_FOLDER).glob("*.py"))
    return {p.relative_to(root).with_suffix("").as_posix() for p in files if p.name != "__init__.py"}


def layout_blocks(text: str) -> list[tuple[str, str]]:
    """``text`` cut into headings, list items and paragraphs, each with the folder its names are read
    in: below a heading that names a folder in a code span (``## DAGs: `dags/```) that folder, else
    the repository root; a list item that opens with a folder (``- `cancel/` (...)``) is that folder,
    inside its parent item's (the opening span itself a block of the parent's)."""
    blocks: list[tuple[str, list[str]]] = []
    section, stack = "", []  # stack: (indent, folder) of the open list items
    after_blank = True
    for line in _FENCE.sub(_blank, text).split("\n"):
        heading, item = _HEADING.match(line), _ITEM.match(line)
        if heading:
            named = [s for s in _SPAN.findall(heading.group(1)) if s.endswith("/")]
            section, stack = (named[0].strip("/") if named else ""), []
            blocks.append(("", [heading.group(1)]))
        elif item:
            indent = len(item.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parent = stack[-1][1] if stack else section
            opener = _FOLDER_OPENER.match(item.group(2))
            folder = f"{parent}/{opener.group(1)}".strip("/") if opener else parent
            if opener:  # the folder itself is read in the parent's
                blocks.append((parent, [opener.group(0)]))
            stack.append((indent, folder))
            blocks.append((folder, [item.group(2)[opener.end() :] if opener else item.group(2)]))
        elif not line.strip():
            after_blank = True
            continue
        elif after_blank and not line.startswith(" "):
            stack = []
            blocks.append((section, [line]))
        elif blocks:
            blocks[-1][1].append(line)
        after_blank = False
    return [(folder, "\n".join(lines)) for folder, lines in blocks]


def layout_names(text: str, root: Path = ROOT) -> tuple[set[str], list[str]]:
    """What ``text`` names, by its convention: a module is a code span holding its path, ``.py`` or
    not; a bare name (``brakes``) is read in the folder of its block only, a span with a
    ``/`` (``relaunch/plan``, ``sweep_core/programs/iris_poll.py``, ``include/``) from that
    folder or any folder above it. Returns the modules named (paths from ``root`` without ``.py``) and every path
    (a span with a ``/`` or a ``.py``; a bare name may be a function or a key) that is in no such
    folder."""
    named: set[str] = set()
    missing: list[str] = []
    for folder, block in layout_blocks(text):
        for span in _SPAN.findall(block):
            if not _NAME.match(span):
                continue  # code, a glob, a placeholder (`<cluster>`) or a URL path (`/sweeps/metrics`)
            path = span.rstrip("/")
            here = Path(folder)
            bases = [here, *here.parents] if "/" in span else [here]
            found = False
            for base in bases:
                target = base / path
                stem = (target.with_suffix("") if target.suffix == ".py" else target).as_posix()
                if (root / f"{stem}.py").is_file():
                    named.add(stem)
                    found = True
                found = found or (root / target).exists()
            if not found and ("/" in span or path.endswith(".py")):
                missing.append(f"`{span}` (in {folder or '.'}/)")
    return named, missing


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines: move reference text to docs/*.md"


def test_the_readme_holds_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)
    commands = [line.split("#", 1)[0].strip() for block in blocks for line in block.split("\n")]
    assert "scripts/demo.sh" in commands, "README.md lost the main command, scripts/demo.sh"
    assert "scripts/test.sh" in commands, "README.md lost the test command, scripts/test.sh"
    for script in ("demo.sh", "test.sh"):
        assert (ROOT / "scripts" / script).is_file()


def test_the_readme_links_every_docs_page() -> None:
    linked = {Path(t.split("#", 1)[0]) for t in link_targets(README.read_text(encoding="utf-8"))}
    missing = [p.relative_to(ROOT) for p in PAGES[1:] if p.relative_to(ROOT) not in linked]
    assert not missing, f"README.md does not link {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_line_is_a_wall_of_text(page: Path) -> None:
    long = [
        (n, len(line)) for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1) if len(line) > MAX_LINE
    ]
    assert not long, f"{page.relative_to(ROOT)}: lines over {MAX_LINE} characters (line, length): {long}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_numbers_or_spec_sections(page: Path) -> None:
    found = unfollowable(page.read_text(encoding="utf-8"))
    assert not found, f"{page.relative_to(ROOT)}: say what is meant in words instead: {found}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_in_the_repository_and_land_on_files(page: Path) -> None:
    problems = link_problems(page)
    assert not problems, f"{page.relative_to(ROOT)}: {problems}"


def test_the_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    """The checks above on a page with every fault, and on the same faults inside code (not links)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("x")
    page = tmp_path / "docs" / "bad.md"
    page.write_text(
        "See [the spec](../../shared/spec/x.md), [web](https://example.org/a), [gone](gone.md),\n"
        "[fine](here.md#top), [up](../docs/here.md), ![pic](here.md) and http://example.org.\n"
        "[ref]: https://example.org/b\n"
        "Code is not a link: `[x](https://a.example)`, but a path is: `../../shared/y.md`, `../x`.\n"
        "```\n[z](missing.md)\n```\n"
    )
    problems = link_problems(page, root=tmp_path)
    assert sorted(problems) == sorted(
        [
            "bare URL: 'http://'",
            "link leaves the repository: ../../shared/spec/x.md",
            "link leaves the repository: https://example.org/a",
            "link to a file that does not exist: gone.md",
            "link leaves the repository: https://example.org/b",
            "path outside the repository: ../../shared/spec/x.md",
            "path outside the repository: ../../shared/y.md",
        ]
    )
    assert [line.split(":")[0] for line in unfollowable("a\nsee issue 12\n(issue-15 §1)\nspec §4\nissues\n")] == [
        "2",
        "3",
        "4",
    ]


def test_the_layout_names_every_module() -> None:
    named, _ = layout_names(LAYOUT.read_text(encoding="utf-8"))
    unnamed = sorted(layout_modules() - named)
    assert not unnamed, (
        f"docs/layout.md does not name {len(unnamed)} modules (name each in a code span in its folder's "
        f"bullet, `plan` inside `cancel/`'s, or by a path such as `cancel/plan`): {unnamed}"
    )


def test_the_layout_names_no_path_that_is_gone() -> None:
    _, gone = layout_names(LAYOUT.read_text(encoding="utf-8"))
    assert not gone, f"docs/layout.md names paths that are not in the tree: {gone}"


def test_the_layout_check_catches_what_it_looks_for(tmp_path: Path) -> None:
    """The layout check on a small tree: a module named bare in its folder's bullet, one by a path
    from a folder above, one named only in the wrong bullet, one not at all, a DAG, and paths gone."""
    core = "plugins/sweep_core"
    for path in ("a/one.py", "a/two.py", "b/three.py", "b/four.py", "a/__init__.py", "../sweep_operators/op.py"):
        (tmp_path / core / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / core / path).write_text("")
    (tmp_path / "dags").mkdir()
    (tmp_path / "dags" / "d.py").write_text("")
    text = (
        "# Layout\n\n## DAGs: `dags/`\n\n- `d.py`: a DAG.\n\n## Core: `plugins/sweep_core/`\n\n"
        "- `a/`: `one` and `gone` (a bare name is read in a/ only, and not checked for being gone);\n"
        "  - nested, still in a/: `b/three` (a path, read from a folder above too) and `b/old.py`.\n"
        "- `b/`: `two` (two lives in a/, so this names nothing) and `c/`.\n"
        "- `e/`: a folder that is gone.\n\n"
        "A paragraph back in the core: `four`, `op`, `a/gone.py`, `one.py`, `*.py`, `/route/x`.\n"
    )
    named, gone = layout_names(text, root=tmp_path)
    assert sorted(layout_modules(tmp_path) - named) == [f"{core}/a/two", f"{core}/b/four", "plugins/sweep_operators/op"]
    assert named == {"dags/d", f"{core}/a/one", f"{core}/b/three"}
    assert gone == [
        f"`b/old.py` (in {core}/a/)",
        f"`c/` (in {core}/b/)",
        f"`e/` (in {core}/)",
        f"`a/gone.py` (in {core}/)",
        f"`one.py` (in {core}/)",
    ]
