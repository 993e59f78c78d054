from datetime import UTC, datetime, timedelta

import pytest

from apps.agreements.models import Agreement

START = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(START, tick=False)
    return time_machine


def seeded(kind: str) -> Agreement:
    """The version the data migration published."""
    return Agreement.objects.get(kind=kind, version="2025-06")


def new_version(kind: str = "terms", version: str = "2026-03", *, published: bool = True) -> Agreement:
    return Agreement.objects.create(
        kind=kind,
        version=version,
        title=f"{kind} {version}",
        body="New text.",
        published_at=START - timedelta(minutes=1) if published else None,
        effective_at=START + timedelta(days=30),
    )


@pytest.fixture(autouse=True)
def _agreements(agreements_seeded):
    """Every test here reads the seeded versions."""
