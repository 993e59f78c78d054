"""The patients app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the patient models they point at and query, the errors they raise, the timeline, consent and
patient-writing services, the erasure and merge hook registries (apps.patients.hooks) and the patient-embed registry
(apps.patients.embeds) they fill in their AppConfig.ready(), and the list-row renderer the Today view shows
(`patient_list_row` for `.values(*LIST_COLUMNS)` rows). Campaigns choose their audience with the list's own filters:
`PatientFiltersSerializer` (the PatientFilters shape), `PatientQuery` and `patient_filtered`, and `SavedView`.
Automations add and remove tags with `patients_bulk_tags` (one patient) and check `Tag` ids.
"""

from apps.patients.api.serializers import PatientFiltersSerializer
from apps.patients.bulk import IMPORT_FIELDS, clean_import_row, import_patients, patients_erase_batch, patients_export
from apps.patients.embeds import PatientEmbed, register_patient_embed
from apps.patients.errors import PatientMerged
from apps.patients.hooks import ErasureResult, on_erase, on_merge, repoint_rows_to_survivor
from apps.patients.models import (
    Activity,
    LeadSource,
    Location,
    MarketingConsent,
    Patient,
    Practitioner,
    PriceList,
    SavedView,
    Status,
    Tag,
    digits_of,
)
from apps.patients.renderers import LIST_COLUMNS, PatientListItemSerializer, patient_list_row
from apps.patients.reporting import first_contact_times, funnel_by_lead_source, names_of
from apps.patients.selectors import PatientQuery, patient_filtered, patient_match
from apps.patients.services import (
    consent_record,
    lead_source_named,
    patient_create,
    patient_update,
    patients_bulk_tags,
    timeline_record,
    timeline_record_many,
)

__all__ = [
    "IMPORT_FIELDS",
    "LIST_COLUMNS",
    "Activity",
    "ErasureResult",
    "LeadSource",
    "Location",
    "MarketingConsent",
    "Patient",
    "PatientEmbed",
    "PatientFiltersSerializer",
    "PatientListItemSerializer",
    "PatientMerged",
    "PatientQuery",
    "Practitioner",
    "PriceList",
    "SavedView",
    "Status",
    "Tag",
    "clean_import_row",
    "consent_record",
    "digits_of",
    "first_contact_times",
    "funnel_by_lead_source",
    "import_patients",
    "lead_source_named",
    "names_of",
    "on_erase",
    "on_merge",
    "patient_create",
    "patient_filtered",
    "patient_list_row",
    "patient_match",
    "patient_update",
    "patients_bulk_tags",
    "patients_erase_batch",
    "patients_export",
    "register_patient_embed",
    "repoint_rows_to_survivor",
    "timeline_record",
    "timeline_record_many",
]
