"""Indexes for the reports area (apps/patients/reporting.py, apps/journeys/reporting.py), raw SQL only: they are
not declared on the models, so the model state (and makemigrations) is untouched.

- patients_report_created_idx: the records created in a range with every column the lead-source funnel and the
  treatment-accepted count read, so both are index-only scans (no heap read of patients_patient).
- patients_first_contact_idx: the outbound calls and messages of each record's timeline (the speed-to-lead
  definition of a contact attempt), in timeline order, with the actor: the first contact is one index-only probe.

Built CONCURRENTLY (non-atomic migration) so a live practice keeps writing while they build.
"""

from django.db import migrations

CREATED = """
CREATE INDEX CONCURRENTLY IF NOT EXISTS patients_report_created_idx
ON patients_patient (organization_id, created_at)
INCLUDE (id, lead_source_id, location_id, status, status_before_archive, merged_into_id)
"""

FIRST_CONTACT = """
CREATE INDEX CONCURRENTLY IF NOT EXISTS patients_first_contact_idx
ON patients_activity (organization_id, patient_id, created_at, id)
INCLUDE (actor_id)
WHERE kind IN ('call', 'message') AND COALESCE(data ->> 'direction', 'outbound') <> 'inbound'
"""


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("patients", "0015_external_id")]

    operations = [
        migrations.RunSQL(CREATED, "DROP INDEX CONCURRENTLY IF EXISTS patients_report_created_idx"),
        migrations.RunSQL(FIRST_CONTACT, "DROP INDEX CONCURRENTLY IF EXISTS patients_first_contact_idx"),
    ]
