"""Typo search at a million patients: patients_searchposting holds one narrow row per word of every patient not
merged away: (practice, word, active, the patient's created_at, the patient's id), and nothing else. Its primary key
in that order serves "the newest 25 patients holding one of these words" with one short index range per word, and
counts them all without reading a patient row (an index-only scan). The patients table's GIN index answers the same
question only by fetching every matching patient row (38,073 of them for `santro` at 1,000,000 patients: 1.5 s).

Kept exact by statement-level triggers beside the vocabulary's (migration 0005): a write removes the old postings of
the rows whose words, practice, created_at, archived or merged state changed and adds their new ones, in the writing
transaction. No business rule lives here. patients_rebuild_derived() now rebuilds the postings too."""

import importlib

from django.db import migrations, models

CHANGED = (
    "n.search_words IS DISTINCT FROM o.search_words OR n.organization_id <> o.organization_id"
    " OR n.created_at <> o.created_at OR (n.archived_at IS NULL) <> (o.archived_at IS NULL)"
    " OR (n.merged_into_id IS NULL) <> (o.merged_into_id IS NULL)"
)
# The rows whose postings change, per event: (old rows to unpost, new rows to post).
ROWS = {
    "INSERT": (None, "new_rows"),
    "DELETE": ("old_rows", None),
    "UPDATE": (
        f"(SELECT o.* FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE {CHANGED})",  # noqa: S608 - module constants only
        f"(SELECT n.* FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE {CHANGED})",  # noqa: S608 - module constants only
    ),
}
# A patient's postings: each of its distinct words once (a per-row DISTINCT, so a rebuild never sorts the whole
# table); merged patients have none (no list or search shows them).
POSTINGS = """SELECT r.organization_id, w.term, r.archived_at IS NULL AS active, r.created_at, r.id
    FROM {rows} r CROSS JOIN LATERAL (SELECT DISTINCT unnest(r.search_words)) AS w(term)
    WHERE r.merged_into_id IS NULL"""
UNPOST = """
    DELETE FROM patients_searchposting p USING ({postings}) d(organization_id, term, active, created_at, id)
    WHERE p.organization_id = d.organization_id AND p.term = d.term AND p.active = d.active
      AND p.patient_created_at = d.created_at AND p.patient_id = d.id;"""
POST = """
    INSERT INTO patients_searchposting (organization_id, term, active, patient_created_at, patient_id)
    {postings};"""
# A write changes a few patients' postings: probe the primary key, never scan the postings (left to choose, the
# planner hash-joined a 500-row bulk update against all of a 100,000-patient practice's postings: 208 → 680 ms).
FUNCTION = """
CREATE FUNCTION patients_patient_postings_{op}() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN{guard}{body}
    RETURN NULL;
END
$$;
CREATE TRIGGER patients_patient_postings_{op} AFTER {event} ON patients_patient
    REFERENCING {referencing} FOR EACH STATEMENT EXECUTE FUNCTION patients_patient_postings_{op}();
"""
_0005 = importlib.import_module("apps.patients.migrations.0005_search_vocabulary_trigger")
REFERENCING = _0005.REFERENCING  # the same transition tables as the vocabulary's triggers


def _function(event: str) -> str:
    old, new = ROWS[event]
    body = (UNPOST.format(postings=POSTINGS.format(rows=old)) if old else "") + (
        POST.format(postings=POSTINGS.format(rows=new)) if new else ""
    )
    # An update that changed no posted column (tags, status, a touch of updated_at) does nothing more.
    guard = (
        f"\n    IF NOT EXISTS (SELECT 1 FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE {CHANGED}) THEN"  # noqa: S608 - module constants only
        "\n        RETURN NULL;\n    END IF;"
        if event == "UPDATE"
        else ""
    )
    return FUNCTION.format(op=event.lower(), event=event, referencing=REFERENCING[event], guard=guard, body=body)


ALL_POSTINGS = POSTINGS.format(rows="patients_patient")
# 0005's patients_rebuild_derived() (which the seed calls after a trigger-less bulk load) with the postings added.
# The migration fills only the postings: rebuilding the vocabulary too would leave its trigram index twice its size.
REBUILD_0005 = _0005.REBUILD.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
END_OF_BODY = "$$;\nSELECT patients_rebuild_derived();"
assert REBUILD_0005.count(END_OF_BODY) == 1
FILL = f"INSERT INTO patients_searchposting (organization_id, term, active, patient_created_at, patient_id)\n{ALL_POSTINGS};"
REBUILD = REBUILD_0005.replace(END_OF_BODY, f"    DELETE FROM patients_searchposting;\n    {FILL}\n$$;\n{FILL}")  # noqa: S608 - module constants only
FORWARD = (
    "".join(_function(event) for event in ("INSERT", "UPDATE", "DELETE"))
    + REBUILD
    + """
ALTER TABLE patients_searchposting SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
"""
)
BACKWARD = (
    "".join(
        f"DROP TRIGGER patients_patient_postings_{op} ON patients_patient;"
        f" DROP FUNCTION patients_patient_postings_{op}();"
        for op in ("insert", "update", "delete")
    )
    + REBUILD_0005
)


class Migration(migrations.Migration):
    dependencies = [
        ("patients", "0010_search_group_domain"),
    ]

    operations = [
        migrations.CreateModel(
            name="SearchPosting",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "organization_id",
                        "term",
                        "active",
                        "patient_created_at",
                        "patient_id",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("organization_id", models.UUIDField()),
                ("term", models.TextField()),
                ("active", models.BooleanField()),
                ("patient_created_at", models.DateTimeField()),
                ("patient_id", models.UUIDField()),
            ],
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
