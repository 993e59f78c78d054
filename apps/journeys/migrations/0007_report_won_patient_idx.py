"""Indexes for the reports area (apps/journeys/reporting.py), raw SQL only: not declared on the model, so the model
state (and makemigrations) is untouched. Built CONCURRENTLY (non-atomic migration).

- journeys_won_patient_idx: the patients with a won journey (treatment accepted), an index-only semi-join.
- journeys_open_report_idx: the open journeys of a pipeline in (stage, currency) order with the columns the open
  pipeline aggregates, so the per-stage count, value and time-in-stage median are an index-only scan read in group
  order (no sort of every open journey, which spilled to disk at work_mem 4 MB).
"""

from django.db import migrations


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("journeys", "0006_report_indexes")]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS journeys_won_patient_idx "
            "ON journeys_journey (organization_id, patient_id) WHERE status = 'won'",
            "DROP INDEX CONCURRENTLY IF EXISTS journeys_won_patient_idx",
        ),
        migrations.RunSQL(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS journeys_open_report_idx "
            "ON journeys_journey (organization_id, pipeline_id, stage_id, currency) "
            "INCLUDE (stage_entered_at, estimated_value, assignee_id) WHERE status = 'open'",
            "DROP INDEX CONCURRENTLY IF EXISTS journeys_open_report_idx",
        ),
    ]
