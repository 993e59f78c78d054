"""The CRM benchmark's database: the patients benchmark's seed (bench.patients.seed, reused as it is) in a database of
its own, then the CRM on top of it, set-based like the patients.

Per practice p with N patients (the measured one has 100,000; OTHERS more have OTHER_PATIENTS each, so every read
has to filter by tenant), in proportion to N: 0.3 N journeys, 0.5 N tasks and 0.2 N appointments, that is 30,000,
50,000 and 20,000 in the measured practice. Each practice also gets 5 team members besides its owner, 8
practitioners, a treatment catalogue and the default pipeline; the last two come from the app's own service
(apps.journeys.services.practice_catalogue_seed), as on a practice's first use. Every row's id is
pg_temp.bench_uuid(kind, practice, n) and every pick a hash of (practice, n), as in bench.patients.seed.

- Journeys: journey j of the first 90% is on patient j; the rest reuse the patients of the first ones with the next
  treatment of the catalogue, so no patient has two open journeys toward one treatment (journeys_journey_one_open).
  58% open (spread over the five open stages, most in the early ones), 25% won, 17% lost; time in stage skewed
  toward recent (20% entered their stage within the week); 25% assigned to the owner, 57% to other members.
- Tasks: due from 60 days ago to 30 days ahead (8% undated); past ones mostly completed or cancelled, 20% left open
  (overdue); 35% assigned to the owner (the measuring member), 57% to other members; 40% on a journey (and its
  patient), 45% on a patient only.
- Appointments: 8 practitioners x 16 half-hour slots a day (08:30-16:30 in the practice's timezone, every day of the
  week, so "today" is a full day whatever day the benchmark runs), 4 slots in 5 taken, 80% of the days before
  today: about 100 a day. Slots never overlap, so the exclusion constraint appointments_no_double_booking holds.
  Past ones completed (82%), no-show or cancelled; future ones booked, confirmed or cancelled.

The CRM part is rebuilt (its tables truncated) when missing, when the patients seed was rebuilt, or when older than
STALE_AFTER: its dates are relative to the time it was seeded, and "today" moves. What was seeded and when is
kept in the database itself (table bench_crm_seed), so it goes when the database is dropped.
"""

import datetime
import time
from dataclasses import dataclass

from psycopg import sql
from psycopg.types.json import Jsonb

from bench import env
from bench.patients import seed

DEFAULT_URL = env.DEFAULT_URL + "_crm"  # practice_crm_bench_crm
PATIENTS, OTHERS, OTHER_PATIENTS = 100_000, 5, 10_000
# Rows per patient of a practice: 30,000 journeys, 50,000 tasks and 20,000 appointments at 100,000 patients.
PER_PATIENT = {"journeys": 0.3, "tasks": 0.5, "appointments": 0.2}
TIMEZONE = "Europe/Rome"
STALE_AFTER = datetime.timedelta(hours=12)
CRM_SEED_VERSION = 1
CRM_TABLES = ("journeys_journey", "tasks_task", "appointments_appointment", "journeys_stage", "journeys_treatment")

MEMBERS = [  # (name, role): the team besides the owner
    ("Giulia Conti", "manager"),
    ("Marco Ferri", "front_desk"),
    ("Sara Galli", "front_desk"),
    ("Luca Moretti", "telesales"),
    ("Elena Rinaldi", "telesales"),
]
PRACTITIONERS = [
    ("Dott. Andrea Bianchi", "dentist"),
    ("Dott.ssa Chiara Romano", "dentist"),
    ("Dott. Paolo Ricci", "dentist"),
    ("Dott.ssa Francesca Marino", "dentist"),
    ("Dott. Stefano Greco", "dentist"),
    ("Dott.ssa Valentina Bruno", "dentist"),
    ("Martina Colombo", "hygienist"),
    ("Alessia Fontana", "hygienist"),
]
SLOTS_PER_DAY, SLOT_MINUTES, FIRST_SLOT = 16, 30, "08:30"
TREATMENTS = [  # (name, category, default value in EUR, minutes); "General enquiry" is the app's built-in one
    ("Implant", "Implantology", 2500, 90),
    ("Clear aligners", "Orthodontics", 3800, 45),
    ("Whitening", "Cosmetic", 350, 60),
    ("Crown", "Prosthodontics", 900, 60),
    ("Veneers", "Cosmetic", 4500, 90),
    ("Hygiene", "Prevention", 90, 45),
    ("Root canal", "Endodontics", 600, 90),
]
SOURCES = ["Website", "Google Ads", "Facebook", "Referral", "Walk-in", "Phone"]
LOST_REASONS = ["Too expensive", "Chose another practice", "No answer after 5 attempts", "Not ready yet"]
TASK_TITLES = [
    "Call back about the quote",
    "Confirm tomorrow's appointment",
    "Send the treatment plan",
    "Follow up after the consultation",
    "Request X-rays from the previous dentist",
    "Chase the unpaid deposit",
    "Check the insurance pre-authorisation",
    "Book the hygiene recall",
]
APPOINTMENT_TYPES = ["consultation", "treatment", "treatment", "hygiene", "review", "consultation", "emergency"]


def database_url() -> str:
    return env.database_url("BENCH_CRM_DATABASE_URL", DEFAULT_URL)


# --- the patients, through bench.patients.seed --------------------------------------------------------------------


def prepare_patients(url: str, *, reseed: bool, log) -> seed.SeedInfo:
    """The patients benchmark's seed (PATIENTS in the measured practice, OTHERS x OTHER_PATIENTS), reused when the
    database already holds it, like bench.patients.prepare.prepare."""
    wanted = seed.SeedInfo(PATIENTS, OTHERS, OTHER_PATIENTS, organization_id="", api_key="")
    if not reseed and env.exists(url) and seed.is_seeded(url, wanted):
        log(f"database {env.database_name(url)} already holds the patients seed: reusing it (--reseed rebuilds it)")
        env.migrate(url)
        return seed.SeedInfo.load(url)
    log(f"building database {env.database_name(url)}")
    log(f"migrated in {env.rebuild(url):.1f}s")
    log(f"seeding {PATIENTS:,} patients in the measured practice and {OTHERS} practices of {OTHER_PATIENTS:,}")
    return seed.seed(url, patients=PATIENTS, others=OTHERS, other_patients=OTHER_PATIENTS, log=log)


# --- the CRM on top -------------------------------------------------------------------------------------------------


@dataclass
class CrmInfo:
    organization_id: str  # the measured practice (bench.patients.seed's practice 0)
    owner_id: str  # its owner: the API key's user, the measuring member
    seed_time: datetime.datetime
    counts: dict
    seed_seconds: float
    version: int = CRM_SEED_VERSION


# What the CRM seed was, kept in the database it describes (dropped with it, never out of step with it).
MARKER_TABLE = """
CREATE TABLE IF NOT EXISTS bench_crm_seed (
    organization_id text, owner_id text, seed_time timestamptz, counts jsonb, seed_seconds float8, version int
)
"""


def _marker(conn) -> CrmInfo | None:
    if conn.execute("SELECT to_regclass('bench_crm_seed')").fetchone()[0] is None:
        return None
    row = conn.execute(
        "SELECT organization_id, owner_id, seed_time, counts, seed_seconds, version FROM bench_crm_seed"
    ).fetchone()
    return CrmInfo(*row) if row else None


def _counts(patients: int) -> dict[str, int]:
    return {kind: round(patients * share) for kind, share in PER_PATIENT.items()}


def _measured_counts(conn, organization_id: str) -> dict[str, int]:
    return {
        kind: conn.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE organization_id = %s").format(sql.Identifier(table)),
            [organization_id],
        ).fetchone()[0]
        for kind, table in (
            ("journeys", "journeys_journey"),
            ("tasks", "tasks_task"),
            ("appointments", "appointments_appointment"),
        )
    }


def prepare_crm(url: str, info: seed.SeedInfo, *, reseed: bool, log) -> CrmInfo:
    """The CRM rows (Django must be set up on `url`): reused when fresh and complete, else rebuilt."""
    with env.connect(url) as conn:
        crm = _marker(conn)
        if (
            crm is not None
            and not reseed
            and (crm.version, crm.organization_id) == (CRM_SEED_VERSION, info.organization_id)
        ):
            age = datetime.datetime.now(datetime.UTC) - crm.seed_time
            complete = _measured_counts(conn, info.organization_id) == _counts(info.patients)
            if complete and age < STALE_AFTER:
                log(f"CRM rows seeded {age.total_seconds() / 3600:.1f} h ago: reusing them")
                return crm
            log("CRM rows incomplete" if not complete else f"CRM rows older than {STALE_AFTER}: rebuilding them")
    return seed_crm(url, info, log=log)


def _catalogue(org_ids: list[str]) -> None:
    """The built-in treatment and the default pipeline with its stages, as the app seeds them on first use."""
    from apps.accounts.models import Organization
    from apps.journeys import services

    for organization in Organization.objects.filter(id__in=org_ids):
        services.practice_catalogue_seed(organization=organization)


RESET_SQL = "TRUNCATE appointments_appointment, tasks_task, journeys_journey"

TEAM_SQL = [
    """
    INSERT INTO accounts_user (id, password, last_login, is_superuser, email, name, is_active, is_staff,
                               created_at, updated_at)
    SELECT pg_temp.bench_uuid('crm-user', o.idx, m.i), '!', NULL, false,
           'member' || m.i || '.p' || o.idx || '@bench-practice.example', m.name, true, false, now(), now()
    FROM bench_org o CROSS JOIN unnest(%(member_names)s::text[]) WITH ORDINALITY AS m(name, i)
    ON CONFLICT DO NOTHING
    """,
    """
    INSERT INTO accounts_membership (id, organization_id, user_id, role, default_workspace, hide_other_workspace,
                                     access_generation, created_at, updated_at)
    SELECT pg_temp.bench_uuid('crm-member', o.idx, m.i), o.org_id, pg_temp.bench_uuid('crm-user', o.idx, m.i),
           m.role, NULL, false, 0, now(), now()
    FROM bench_org o CROSS JOIN unnest(%(member_roles)s::text[]) WITH ORDINALITY AS m(role, i)
    ON CONFLICT DO NOTHING
    """,
    """
    INSERT INTO patients_practitioner (id, organization_id, name, kind, archived_at, created_at, updated_at)
    SELECT pg_temp.bench_uuid('practitioner', o.idx, p.i), o.org_id, p.name, p.kind, NULL, now(), now()
    FROM bench_org o
    CROSS JOIN unnest(%(practitioner_names)s::text[], %(practitioner_kinds)s::text[])
               WITH ORDINALITY AS p(name, kind, i)
    ON CONFLICT DO NOTHING
    """,
    """
    INSERT INTO journeys_treatment (id, organization_id, name, category, default_value, currency, active,
                                    duration_minutes, is_builtin, created_at, updated_at)
    SELECT pg_temp.bench_uuid('treatment', o.idx, t.i), o.org_id, t.name, t.category, t.value, 'EUR', true,
           t.minutes, false, now(), now()
    FROM bench_org o
    CROSS JOIN unnest(%(treatment_names)s::text[], %(treatment_categories)s::text[], %(treatment_values)s::numeric[],
                      %(treatment_minutes)s::int[]) WITH ORDINALITY AS t(name, category, value, minutes, i)
    ON CONFLICT DO NOTHING
    """,
    "UPDATE accounts_organization SET timezone = %(timezone)s WHERE id IN (SELECT org_id FROM bench_org)",
]

# One row per practice with what the set-based inserts pick from.
CRM_ORG_SQL = """
CREATE TEMP TABLE crm_org AS
SELECT o.idx, o.org_id, o.owner_id, o.patients, n.journeys, n.tasks, n.appointments,
       ceil(n.journeys * 0.9)::int AS first_block,
       p.id AS pipeline_id,
       ARRAY(SELECT s.id FROM journeys_stage s WHERE s.pipeline_id = p.id AND s.kind = 'open' AND s.archived_at IS NULL
             ORDER BY s.position) AS open_stages,
       (SELECT s.id FROM journeys_stage s WHERE s.pipeline_id = p.id AND s.kind = 'won') AS won_stage,
       (SELECT s.id FROM journeys_stage s WHERE s.pipeline_id = p.id AND s.kind = 'lost') AS lost_stage,
       t.ids AS treatments, t.vals AS treatment_values,
       ARRAY(SELECT pg_temp.bench_uuid('crm-user', o.idx, i) FROM generate_series(1, %(members)s) AS i) AS members,
       ARRAY(SELECT pg_temp.bench_uuid('practitioner', o.idx, i)
             FROM generate_series(1, %(practitioners)s) AS i) AS practitioners,
       ARRAY(SELECT l.id FROM patients_location l WHERE l.organization_id = o.org_id ORDER BY l.name) AS locations,
       (pg_temp.t0() AT TIME ZONE %(timezone)s)::date AS today,
       floor(0.8 * ceil((((n.appointments - 1) * 5) / 4 + 1)::numeric
                        / (%(practitioners)s * %(slots)s)))::int AS past_days
FROM bench_org o
CROSS JOIN LATERAL (SELECT round(o.patients * %(journeys)s)::int AS journeys,
                           round(o.patients * %(tasks)s)::int AS tasks,
                           round(o.patients * %(appointments)s)::int AS appointments) n
JOIN journeys_pipeline p ON p.organization_id = o.org_id AND p.is_default
CROSS JOIN LATERAL (SELECT array_agg(id ORDER BY is_builtin DESC, name) AS ids,
                           array_agg(default_value ORDER BY is_builtin DESC, name) AS vals
                    FROM journeys_treatment WHERE organization_id = o.org_id AND active) t
"""

JOURNEYS_SQL = """
INSERT INTO journeys_journey (id, organization_id, created_at, updated_at, patient_id, treatment_id, pipeline_id,
    stage_id, status, estimated_value, currency, assignee_id, source, lost_reason, last_open_stage_id,
    stage_entered_at, won_at, lost_at, reopened_at)
SELECT pg_temp.bench_uuid('journey', c.idx, j),
       c.org_id,
       x.entered - CASE WHEN x.stage_pos = 1 THEN interval '0' ELSE pg_temp.r(kj, 5, 43200) * interval '1 minute' END,
       x.entered,
       pg_temp.bench_uuid('patient', c.idx, base),
       c.treatments[x.t],
       c.pipeline_id,
       CASE x.status WHEN 'open' THEN c.open_stages[x.stage_pos] WHEN 'won' THEN c.won_stage ELSE c.lost_stage END,
       x.status,
       round(c.treatment_values[x.t] * (80 + pg_temp.r(kj, 6, 41)) / 100),
       'EUR',
       CASE WHEN pg_temp.r(kj, 7, 100) < 25 THEN c.owner_id
            WHEN pg_temp.r(kj, 7, 100) < 82 THEN c.members[1 + pg_temp.r(kj, 8, cardinality(c.members))] END,
       (%(sources)s::text[])[1 + pg_temp.r(kj, 9, cardinality(%(sources)s::text[]))],
       CASE WHEN x.status = 'lost'
            THEN (%(lost_reasons)s::text[])[1 + pg_temp.r(kj, 10, cardinality(%(lost_reasons)s::text[]))]
            ELSE '' END,
       CASE WHEN x.status <> 'open' THEN c.open_stages[x.stage_pos] END,
       x.entered,
       CASE WHEN x.status = 'won' THEN x.entered END,
       CASE WHEN x.status = 'lost' THEN x.entered END,
       NULL
FROM crm_org c
CROSS JOIN LATERAL generate_series(1, c.journeys) AS j
CROSS JOIN LATERAL (SELECT CASE WHEN j <= c.first_block THEN j ELSE j - c.first_block END AS base) b
CROSS JOIN LATERAL (SELECT c.idx::bigint * 10000000000 + b.base AS k, c.idx::bigint * 10000000000 + j AS kj) kk
CROSS JOIN LATERAL (
    SELECT 1 + mod(pg_temp.r(k, 1, cardinality(c.treatments)) + (j > c.first_block)::int,
                   cardinality(c.treatments)) AS t,
           CASE WHEN pg_temp.r(kj, 2, 100) < 58 THEN 'open' WHEN pg_temp.r(kj, 2, 100) < 83 THEN 'won'
                ELSE 'lost' END AS status,
           least(cardinality(c.open_stages), CASE WHEN pg_temp.r(kj, 3, 100) < 30 THEN 1
                WHEN pg_temp.r(kj, 3, 100) < 55 THEN 2 WHEN pg_temp.r(kj, 3, 100) < 75 THEN 3
                WHEN pg_temp.r(kj, 3, 100) < 90 THEN 4 ELSE 5 END) AS stage_pos,
           pg_temp.t0() - 259200 * power(pg_temp.r(kj, 4, 100000) / 100000.0, 2) * interval '1 minute' AS entered
) x
"""

TASKS_SQL = """
INSERT INTO tasks_task (id, organization_id, created_at, updated_at, title, description, due_at, priority, status,
    completed_at, cancelled_at, assignee_id, created_by_id, patient_id, journey_id)
SELECT pg_temp.bench_uuid('task', c.idx, n),
       c.org_id,
       s.created,
       CASE WHEN s.status = 'open' THEN s.created ELSE s.done END,
       (%(titles)s::text[])[1 + pg_temp.r(k, 10, cardinality(%(titles)s::text[]))],
       CASE WHEN pg_temp.r(k, 11, 100) < 30 THEN 'Note left by the front desk.' ELSE '' END,
       d.due,
       CASE WHEN pg_temp.r(k, 6, 100) < 15 THEN 'low' WHEN pg_temp.r(k, 6, 100) < 70 THEN 'normal'
            WHEN pg_temp.r(k, 6, 100) < 92 THEN 'high' ELSE 'urgent' END,
       s.status,
       CASE WHEN s.status = 'completed' THEN s.done END,
       CASE WHEN s.status = 'cancelled' THEN s.done END,
       CASE WHEN pg_temp.r(k, 12, 100) < 35 THEN c.owner_id
            WHEN pg_temp.r(k, 12, 100) < 92 THEN c.members[1 + pg_temp.r(k, 13, cardinality(c.members))] END,
       CASE WHEN pg_temp.r(k, 14, 2) = 0 THEN c.owner_id
            ELSE c.members[1 + pg_temp.r(k, 15, cardinality(c.members))] END,
       CASE s.link
            WHEN 'journey' THEN pg_temp.bench_uuid(
                'patient', c.idx, CASE WHEN d.jn <= c.first_block THEN d.jn ELSE d.jn - c.first_block END)
            WHEN 'patient' THEN pg_temp.bench_uuid('patient', c.idx, 1 + pg_temp.r(k, 9, c.patients)) END,
       CASE WHEN s.link = 'journey' THEN pg_temp.bench_uuid('journey', c.idx, d.jn) END
FROM crm_org c
CROSS JOIN LATERAL generate_series(1, c.tasks) AS n
CROSS JOIN LATERAL (SELECT c.idx::bigint * 10000000000 + n AS k) kk
CROSS JOIN LATERAL (
    SELECT CASE WHEN pg_temp.r(k, 1, 100) >= 8
                THEN pg_temp.t0() + (pg_temp.r(k, 2, 129600) - 86400) * interval '1 minute' END AS due,
           1 + pg_temp.r(k, 8, c.journeys) AS jn
) d
CROSS JOIN LATERAL (
    SELECT CASE
               WHEN d.due IS NULL THEN (CASE WHEN pg_temp.r(k, 3, 100) < 50 THEN 'open'
                                             WHEN pg_temp.r(k, 3, 100) < 90 THEN 'completed' ELSE 'cancelled' END)
               WHEN d.due < pg_temp.t0() THEN (CASE WHEN pg_temp.r(k, 3, 100) < 70 THEN 'completed'
                                                    WHEN pg_temp.r(k, 3, 100) < 80 THEN 'cancelled' ELSE 'open' END)
               ELSE (CASE WHEN pg_temp.r(k, 3, 100) < 5 THEN 'completed'
                          WHEN pg_temp.r(k, 3, 100) < 8 THEN 'cancelled' ELSE 'open' END)
           END AS status,
           least(coalesce(d.due, pg_temp.t0()), pg_temp.t0()) - (1 + pg_temp.r(k, 4, 20160)) * interval '1 minute'
               AS created,
           CASE WHEN pg_temp.r(k, 7, 100) < 40 THEN 'journey' WHEN pg_temp.r(k, 7, 100) < 85 THEN 'patient' END
               AS link
) s0
CROSS JOIN LATERAL (
    SELECT s0.*, least(pg_temp.t0(), s0.created + pg_temp.r(k, 5, 10080) * interval '1 minute') AS done
) s
"""

APPOINTMENTS_SQL = """
INSERT INTO appointments_appointment (id, organization_id, created_at, updated_at, appointment_type, starts_at,
    ends_at, status, status_changed_at, cancel_reason, notes, created_by_id, journey_id, location_id, patient_id,
    practitioner_id, treatment_id)
SELECT pg_temp.bench_uuid('appointment', c.idx, a),
       c.org_id,
       st.created,
       coalesce(st.changed, st.created),
       (%(types)s::text[])[1 + pg_temp.r(k, 6, cardinality(%(types)s::text[]))],
       st.starts,
       st.starts + %(slot_minutes)s * interval '1 minute',
       st.status,
       st.changed,
       CASE WHEN st.status = 'cancelled' THEN 'Patient request' ELSE '' END,
       '',
       c.owner_id,
       NULL,
       c.locations[1 + mod(pos.p - 1, cardinality(c.locations))],
       pg_temp.bench_uuid('patient', c.idx, 1 + pg_temp.r(k, 3, c.patients)),
       c.practitioners[pos.p],
       CASE WHEN pg_temp.r(k, 4, 100) < 70 THEN c.treatments[1 + pg_temp.r(k, 7, cardinality(c.treatments))] END
FROM crm_org c
CROSS JOIN LATERAL generate_series(0, c.appointments - 1) AS a
-- 4 slots in 5 taken: appointment a holds slot (5a)/4; practitioner first, then the time of day, then the day.
CROSS JOIN LATERAL (SELECT c.idx::bigint * 10000000000 + a AS k, (a * 5) / 4 AS s) kk
CROSS JOIN LATERAL (SELECT 1 + mod(kk.s, cardinality(c.practitioners)) AS p,
                           mod(kk.s / cardinality(c.practitioners), %(slots)s) AS slot,
                           kk.s / (cardinality(c.practitioners) * %(slots)s) AS day) pos
CROSS JOIN LATERAL (
    SELECT ((c.today + (pos.day - c.past_days))::timestamp + %(first_slot)s::time
            + pos.slot * %(slot_minutes)s * interval '1 minute') AT TIME ZONE %(timezone)s AS starts
) t
CROSS JOIN LATERAL (
    SELECT t.starts,
           CASE WHEN t.starts + %(slot_minutes)s * interval '1 minute' <= pg_temp.t0() THEN
                    (CASE WHEN pg_temp.r(k, 1, 100) < 82 THEN 'completed' WHEN pg_temp.r(k, 1, 100) < 87 THEN 'no_show'
                          ELSE 'cancelled' END)
                WHEN t.starts <= pg_temp.t0() THEN 'arrived'
                ELSE (CASE WHEN pg_temp.r(k, 1, 100) < 55 THEN 'booked' WHEN pg_temp.r(k, 1, 100) < 88 THEN 'confirmed'
                           ELSE 'cancelled' END)
           END AS status,
           least(t.starts - (60 + pg_temp.r(k, 5, 43200)) * interval '1 minute', pg_temp.t0() - interval '1 minute')
               AS created
) st0
CROSS JOIN LATERAL (
    SELECT st0.*,
           CASE st0.status
                WHEN 'booked' THEN NULL
                WHEN 'cancelled' THEN st0.created + (least(st0.starts, pg_temp.t0()) - st0.created) / 2
                ELSE least(st0.starts + %(slot_minutes)s * interval '1 minute', pg_temp.t0())
           END AS changed
) st
"""


def _params() -> dict:
    return {
        "member_names": [name for name, _ in MEMBERS],
        "member_roles": [role for _, role in MEMBERS],
        "practitioner_names": [name for name, _ in PRACTITIONERS],
        "practitioner_kinds": [kind for _, kind in PRACTITIONERS],
        "treatment_names": [t[0] for t in TREATMENTS],
        "treatment_categories": [t[1] for t in TREATMENTS],
        "treatment_values": [t[2] for t in TREATMENTS],
        "treatment_minutes": [t[3] for t in TREATMENTS],
        "timezone": TIMEZONE,
        "members": len(MEMBERS),
        "practitioners": len(PRACTITIONERS),
        "slots": SLOTS_PER_DAY,
        "slot_minutes": SLOT_MINUTES,
        "first_slot": FIRST_SLOT,
        "sources": SOURCES,
        "lost_reasons": LOST_REASONS,
        "titles": TASK_TITLES,
        "types": APPOINTMENT_TYPES,
        **PER_PATIENT,
    }


def seed_crm(url: str, info: seed.SeedInfo, *, log) -> CrmInfo:
    started = time.monotonic()
    with env.connect(url) as conn:
        owner_id = str(
            conn.execute(
                "SELECT user_id FROM accounts_membership WHERE organization_id = %s AND role = 'owner'",
                [info.organization_id],
            ).fetchone()[0]
        )
    # bench_org as bench.patients.seed builds it: practice 0 is the measured one, 1..others were inserted with
    # det_uuid ids.
    orgs = [(0, info.organization_id, owner_id, info.patients, "")] + [
        (i, seed.det_uuid("org", i, 0), seed.det_uuid("user", i, 0), info.other_patients, "")
        for i in range(1, info.others + 1)
    ]
    seed_time = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    conn = seed._session(url, orgs=orgs, seed_time=seed_time)
    try:
        conn.execute(RESET_SQL)
        _catalogue([str(org[1]) for org in orgs])
        params = _params()
        with conn.transaction():
            for statement in TEAM_SQL:
                conn.execute(statement, params)
        conn.execute(CRM_ORG_SQL, params)
        for label, statement in (
            ("journeys", JOURNEYS_SQL),
            ("tasks", TASKS_SQL),
            ("appointments", APPOINTMENTS_SQL),
        ):
            t0 = time.monotonic()
            count = conn.execute(statement, params).rowcount
            log(f"inserted {count:,} {label} in {time.monotonic() - t0:.1f}s")
    finally:
        conn.close()
    t0 = time.monotonic()
    with env.connect(url) as conn:
        conn.execute("VACUUM (ANALYZE) " + ", ".join(CRM_TABLES) + ", accounts_membership, patients_practitioner")
        counts = _measured_counts(conn, info.organization_id)
    log(f"VACUUM ANALYZE of the CRM tables in {time.monotonic() - t0:.1f}s")
    if counts != _counts(info.patients):
        raise SystemExit(f"bench crm: the measured practice holds {counts}, expected {_counts(info.patients)}")
    crm = CrmInfo(info.organization_id, owner_id, seed_time, counts, round(time.monotonic() - started, 1))
    with env.connect(url) as conn, conn.transaction():
        conn.execute(MARKER_TABLE)
        conn.execute("DELETE FROM bench_crm_seed")
        conn.execute(
            "INSERT INTO bench_crm_seed VALUES (%s, %s, %s, %s, %s, %s)",
            [crm.organization_id, crm.owner_id, crm.seed_time, Jsonb(crm.counts), crm.seed_seconds, crm.version],
        )
    log(f"seeded the CRM rows in {crm.seed_seconds:.1f}s")
    return crm
