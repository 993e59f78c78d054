"""The patient record's sections: each clinical app registers the part it keeps (notes, medical history and
alerts, treatment plans and the charting summary, recalls) in its AppConfig.ready(); GET /patient-record/{id}
assembles them. A builder takes (organization, patient_id) and returns JSON-ready data for its section."""

from collections.abc import Callable
from typing import Any
from uuid import UUID

RecordSectionBuilder = Callable[[Any, UUID], Any]

_SECTIONS: dict[str, RecordSectionBuilder] = {}


def register_record_section(name: str, build: RecordSectionBuilder) -> None:
    """Register the builder of one section (camelCase name, as it appears in the record). Names are unique."""
    if name in _SECTIONS and _SECTIONS[name] is not build:
        raise ValueError(f"record section {name!r} is registered twice")
    _SECTIONS[name] = build


def record_sections() -> dict[str, RecordSectionBuilder]:
    return dict(_SECTIONS)
