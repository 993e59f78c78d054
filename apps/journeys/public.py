"""The journeys app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the journey and treatment models they point at and query, the services capture calls to open
a journey for a lead, the row selector the Today view builds on, and the renderers of a journey row (and of its
patient and treatment summaries, which appointments reuse), with `journey_row` for `.values(*JOURNEY_VALUES)` rows.
"""

from apps.journeys.models import Journey, JourneyStatus, Stage, StageKind, Treatment
from apps.journeys.renderers import JourneyPatientSerializer, JourneySerializer, JourneyTreatmentSerializer, journey_row
from apps.journeys.selectors import JOURNEY_VALUES, journey_rows
from apps.journeys.services import journey_create, treatment_ensure_builtin

__all__ = [
    "JOURNEY_VALUES",
    "Journey",
    "JourneyPatientSerializer",
    "JourneySerializer",
    "JourneyStatus",
    "JourneyTreatmentSerializer",
    "Stage",
    "StageKind",
    "Treatment",
    "journey_create",
    "journey_row",
    "journey_rows",
    "treatment_ensure_builtin",
]
