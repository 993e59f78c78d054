"""Every relative link in README.md and docs/*.md points at a file of the checkout."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Written in parallel on another branch (the import-layer rules); linked before it lands.
NOT_YET_IN_TREE = {"docs/layers.md"}
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)


def _documents():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _relative_links(document: Path):
    text = CODE.sub("", document.read_text(encoding="utf-8"))
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # absolute URL, mailto:, or an anchor in the same page
        yield target.split("#", 1)[0]


def test_there_are_documents_and_links():
    assert (ROOT / "README.md").is_file()
    assert sum(1 for document in _documents() for _ in _relative_links(document)) > 10


def test_every_relative_link_points_at_an_existing_file():
    broken = []
    for document in _documents():
        for target in _relative_links(document):
            resolved = (document.parent / target).resolve()
            relative = resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else str(resolved)
            if relative in NOT_YET_IN_TREE:
                continue
            if not resolved.exists():
                broken.append(f"{document.relative_to(ROOT)}: {target}")
    assert not broken, broken
