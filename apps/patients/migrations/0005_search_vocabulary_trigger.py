"""Index maintenance for the patients table, in the database: one statement-level trigger per event (insert,
update, delete; transition tables, so bulk writes stay set-based) keeps

- patients_searchterm: the practice's vocabulary, each word of its patients' search_words with the number of
  patients using it. A word whose count reaches zero is deleted (right to erasure: nothing of an erased
  patient's name, e-mail or phone survives in the vocabulary).
- patients_patientcounter: the practice's active and not-merged patient counts (the unfiltered list's total).

Reference counts and row locks taken in (organization, term) order keep both exact under concurrent writers.
No business rule lives here. patients_rebuild_derived() recomputes both tables from scratch (backfill here, the
benchmark seed after a trigger-less bulk load)."""

from django.db import migrations

ACTIVE = "(archived_at IS NULL AND merged_into_id IS NULL)"
UNMERGED = "(merged_into_id IS NULL)"

# Per event: the rows counted (+1) and uncounted (-1). An update counts only rows whose words, practice or
# active/merged state changed (a bulk touch of updated_at changes nothing here).
CHANGES = {
    "INSERT": "SELECT n.*, 1 AS sign FROM new_rows n",
    "DELETE": "SELECT o.*, -1 AS sign FROM old_rows o",
    "UPDATE": """
        SELECT n.*, 1 AS sign FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE n.search_words IS DISTINCT FROM o.search_words OR n.organization_id <> o.organization_id
           OR (n.archived_at IS NULL) <> (o.archived_at IS NULL) OR (n.merged_into_id IS NULL) <> (o.merged_into_id IS NULL)
        UNION ALL
        SELECT o.*, -1 AS sign FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE n.search_words IS DISTINCT FROM o.search_words OR n.organization_id <> o.organization_id
           OR (n.archived_at IS NULL) <> (o.archived_at IS NULL) OR (n.merged_into_id IS NULL) <> (o.merged_into_id IS NULL)
    """,
}

FUNCTION = """
CREATE FUNCTION patients_patient_sync_{op}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    counts record;
    orgs uuid[];
    terms text[];
    deltas int[];
    emptied uuid[];
BEGIN
    -- Counters: an increase may create the practice's row; a decrease only updates it (a practice being deleted
    -- may already have lost its row).
    FOR counts IN
        SELECT organization_id, sum(sign * {active}::int)::int AS active, sum(sign * {unmerged}::int)::int AS unmerged
        FROM ({changes}) c GROUP BY organization_id ORDER BY organization_id
    LOOP
        CONTINUE WHEN counts.active = 0 AND counts.unmerged = 0;
        IF counts.active < 0 OR counts.unmerged < 0 THEN
            UPDATE patients_patientcounter
            SET active = active + counts.active, unmerged = unmerged + counts.unmerged, updated_at = now()
            WHERE organization_id = counts.organization_id;
        ELSE
            INSERT INTO patients_patientcounter AS p (id, organization_id, active, unmerged, created_at, updated_at)
            VALUES (gen_random_uuid(), counts.organization_id, counts.active, counts.unmerged, now(), now())
            ON CONFLICT (organization_id) DO UPDATE
            SET active = p.active + EXCLUDED.active, unmerged = p.unmerged + EXCLUDED.unmerged, updated_at = now();
        END IF;
    END LOOP;

    -- Vocabulary: +1 per patient newly using a word, -1 per patient no longer using it.
    SELECT array_agg(organization_id), array_agg(term), array_agg(delta)
    INTO orgs, terms, deltas
    FROM (
        SELECT organization_id, term, sum(sign)::int AS delta
        FROM (SELECT DISTINCT c.id, c.organization_id, c.sign, w.term
              FROM ({changes}) c CROSS JOIN LATERAL unnest(c.search_words) AS w(term)) per_patient
        GROUP BY organization_id, term
        HAVING sum(sign) <> 0
    ) d;
    IF orgs IS NULL THEN
        RETURN NULL;
    END IF;
    WITH applied AS (
        INSERT INTO patients_searchterm AS t (id, organization_id, term, patients, created_at, updated_at)
        SELECT gen_random_uuid(), d.organization_id, d.term, d.delta, now(), now()
        FROM unnest(orgs, terms, deltas) AS d(organization_id, term, delta)
        ORDER BY d.organization_id, d.term
        ON CONFLICT (organization_id, term) DO UPDATE SET patients = t.patients + EXCLUDED.patients, updated_at = now()
        RETURNING t.id, t.patients
    )
    SELECT array_agg(id) INTO emptied FROM applied WHERE patients <= 0;
    IF emptied IS NOT NULL THEN
        DELETE FROM patients_searchterm WHERE id = ANY(emptied);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER patients_patient_sync_{op} AFTER {event} ON patients_patient
    REFERENCING {referencing} FOR EACH STATEMENT EXECUTE FUNCTION patients_patient_sync_{op}();
"""

REFERENCING = {
    "INSERT": "NEW TABLE AS new_rows",
    "UPDATE": "OLD TABLE AS old_rows NEW TABLE AS new_rows",
    "DELETE": "OLD TABLE AS old_rows",
}

REBUILD = f"""
CREATE FUNCTION patients_rebuild_derived() RETURNS void LANGUAGE sql AS $$
    DELETE FROM patients_searchterm;
    DELETE FROM patients_patientcounter;
    INSERT INTO patients_searchterm (id, organization_id, term, patients, created_at, updated_at)
    SELECT gen_random_uuid(), organization_id, term, count(DISTINCT id), now(), now()
    FROM patients_patient CROSS JOIN LATERAL unnest(search_words) AS w(term)
    GROUP BY organization_id, term;
    INSERT INTO patients_patientcounter (id, organization_id, active, unmerged, created_at, updated_at)
    SELECT gen_random_uuid(), organization_id, count(*) FILTER (WHERE {ACTIVE}), count(*) FILTER (WHERE {UNMERGED}),
           now(), now()
    FROM patients_patient GROUP BY organization_id;
$$;
SELECT patients_rebuild_derived();
"""  # noqa: S608 - the interpolated parts are constants of this module

FORWARD = (
    "".join(
        FUNCTION.format(
            op=op.lower(),
            event=op,
            referencing=REFERENCING[op],
            changes=CHANGES[op],
            active=ACTIVE,
            unmerged=UNMERGED,
        )
        for op in ("INSERT", "UPDATE", "DELETE")
    )
    + REBUILD
    # Fresher visibility map on the big table: index-only counts of filtered lists fetch fewer heap pages.
    + "ALTER TABLE patients_patient SET (autovacuum_vacuum_scale_factor = 0.02,"
    " autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);"
)

BACKWARD = (
    "ALTER TABLE patients_patient RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_insert_scale_factor,"
    " autovacuum_analyze_scale_factor);"
    "DROP FUNCTION patients_rebuild_derived();"
    + "".join(
        f"DROP TRIGGER patients_patient_sync_{op} ON patients_patient; DROP FUNCTION patients_patient_sync_{op}();"
        for op in ("insert", "update", "delete")
    )
)


class Migration(migrations.Migration):
    dependencies = [
        ("patients", "0004_search_vocabulary"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
