"""Where things are."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"  # git-ignored: the seeded database's API key, raw figures, plans
DOC = ROOT / "docs" / "benchmarks.md"
VENV_BIN = ROOT / ".venv" / "bin"
