"""The journeys app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the journey and treatment models they point at and query, the services capture calls to open
a journey for a lead (and `journey_move`: automations' stage moves), the row selector the Today view builds on, and
the renderers of a journey row (and of its patient and treatment summaries, which appointments reuse), with
`journey_row` for `.values(*JOURNEY_VALUES)` rows.
"""

from apps.journeys.models import Journey, JourneyStatus, Pipeline, Stage, StageKind, Treatment
from apps.journeys.renderers import JourneyPatientSerializer, JourneySerializer, JourneyTreatmentSerializer, journey_row
from apps.journeys.reporting import (
    closed_between,
    open_by_stage,
    open_stages,
    pipelines_of,
    won_patients_by_lead_source,
)
from apps.journeys.selectors import JOURNEY_VALUES, journey_rows
from apps.journeys.services import journey_create, journey_move, treatment_ensure_builtin
from apps.journeys.transfer import journeys_export

__all__ = [
    "JOURNEY_VALUES",
    "Journey",
    "JourneyPatientSerializer",
    "JourneySerializer",
    "JourneyStatus",
    "JourneyTreatmentSerializer",
    "Pipeline",
    "Stage",
    "StageKind",
    "Treatment",
    "closed_between",
    "journey_create",
    "journey_move",
    "journey_row",
    "journey_rows",
    "journeys_export",
    "open_by_stage",
    "open_stages",
    "pipelines_of",
    "treatment_ensure_builtin",
    "won_patients_by_lead_source",
]
