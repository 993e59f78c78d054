"""docs/benchmarks.md, one section per benchmark. Each section lives between its own markers,
`<!-- bench:NAME:start -->` and `<!-- bench:NAME:end -->`; a run replaces its section and nothing else (appending
it at the end of the file the first time). Hand-written findings between `<!-- TAG:start -->` and `<!-- TAG:end -->`
inside a section are read back by the writer and kept as written. Also the few formats every section shares."""

import json
import os
import re

from bench.paths import DOC


def markers(name: str) -> tuple[str, str]:
    """The start and end markers of benchmark `name`'s section."""
    return f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"


def read() -> str:
    return DOC.read_text() if DOC.exists() else ""


def block(text: str, start: str, end: str) -> str | None:
    """The text from `start` to `end`, markers included, or None when either is missing."""
    i, j = text.find(start), text.find(end)
    if i == -1 or j == -1:
        return None
    return text[i : j + len(end)]


def write_section(new_section: str, start: str, end: str) -> str:
    """Put `new_section` (markers included) in place of the block between `start` and `end`, or after everything
    else when there is none; the file is replaced atomically. Returns the new text."""
    text = read() or "# Benchmarks\n"
    old = block(text, start, end)
    if old is not None:
        i = text.find(start)
        text = text[:i] + new_section + text[i + len(old) :]
    else:
        text = text.rstrip("\n") + "\n\n" + new_section + "\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    staged = DOC.with_suffix(f".md.tmp{os.getpid()}")
    staged.write_text(text)
    staged.replace(DOC)
    return text


def notes(tag: str, default: str, text: str | None = None) -> str:
    """The hand-written text between `<!-- TAG:start -->` and `<!-- TAG:end -->` (in `text`, else the file), or
    `default` when there is none."""
    found = re.search(
        rf"<!-- {re.escape(tag)}:start -->\n?(.*?)\n?<!-- {re.escape(tag)}:end -->",
        read() if text is None else text,
        re.S,
    )
    return found.group(1).strip() if found and found.group(1).strip() else default


def notes_block(tag: str, default: str, text: str | None = None) -> list[str]:
    """The notes between their markers, as lines of a section (see notes())."""
    return [f"<!-- {tag}:start -->", notes(tag, default, text), f"<!-- {tag}:end -->"]


def machine_line(machine: dict) -> str:
    """The section's "Machine" item, from bench.measure.machine()."""
    return f"- **Machine**: {machine['cpu']}, {machine['memory']}, {machine['os']}"


def ms(value: float) -> str:
    """Milliseconds as the tables show them: one decimal under 100, none from there."""
    return f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"


def met(ok: bool) -> str:
    return "✅" if ok else "❌"


def publish(section: str, raw, data, *, title: str, write, skipped: str, log, contents: str = "raw figures") -> None:
    """The end of every run: its raw figures saved as JSON in `raw`, its section printed and, unless `skipped` says
    why not (e.g. "--no-doc"), written with `write(section)`."""
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(data, indent=1, default=str))
    print()
    print(section)
    print()
    if skipped:
        log(f"raw figures in {raw}; docs/benchmarks.md left unchanged ({skipped})")
    else:
        write(section)
        log(f"wrote the {title} section of docs/benchmarks.md; {contents} in {raw}")
