"""Set-based seeding: one INSERT … SELECT FROM generate_series per table, for every practice at once.

Practice 0 is the big one (created through `manage.py create_practice --api-key`, so its API key is real); practices
1..N are inserted directly with an owner each. Every row's id is derived from (kind, practice, n) by md5, so the
benchmark can name patients without reading them, and a re-run finds the same ids.

Per patient n (1-based) of practice p, deterministic pseudo-random picks come from hashint8extended(key, salt).
The tag "Recall 2025" (tag 1) is given, in the big practice, to exactly EXPORT_TAG_ROWS patients (every step-th n),
none of them archived or merged, so an export filtered on it returns exactly that many rows.
"""

import datetime
import hashlib
import json
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass

import psycopg

from bench import env
from bench.paths import RESULTS
from bench.patients import data

# 4: search vocabulary and patient counters (rebuilt after the trigger-less load); 5: postings; 6: facets
SEED_VERSION = 6
EXPORT_TAG_ROWS = 10_000
OWNER_EMAIL = "owner@bench-practice.example"


def det_uuid(kind: str, practice: int, n: int) -> uuid.UUID:
    """Python twin of the SQL function pg_temp.bench_uuid (a version-4-shaped uuid from md5)."""
    h = hashlib.md5(f"{kind}:{practice}:{n}".encode()).hexdigest()
    return uuid.UUID(h[:12] + "4" + h[13:16] + "8" + h[17:])


def export_step(patients: int) -> int:
    return max(1, patients // EXPORT_TAG_ROWS)


@dataclass
class SeedInfo:
    patients: int
    others: int
    other_patients: int
    organization_id: str
    api_key: str
    seed_version: int = SEED_VERSION
    seed_seconds: float = 0.0  # how long seeding took (create_practice to VACUUM ANALYZE)

    @classmethod
    def path(cls, url: str):
        return RESULTS / f"seed-{env.database_name(url)}.json"

    @classmethod
    def load(cls, url: str) -> "SeedInfo | None":
        try:
            return cls(**json.loads(cls.path(url).read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def save(self, url: str) -> None:
        RESULTS.mkdir(parents=True, exist_ok=True)
        self.path(url).write_text(json.dumps(self.__dict__, indent=2))

    # Names of things the scenarios use.
    def patient_id(self, n: int) -> uuid.UUID:
        return det_uuid("patient", 0, n)

    def tag_id(self, index: int) -> uuid.UUID:
        """Tag index is 1-based, in data.TAGS order."""
        return det_uuid("tag", 0, index)


def is_seeded(url: str, wanted: SeedInfo) -> bool:
    info = SeedInfo.load(url)
    if info is None or (info.patients, info.others, info.other_patients, info.seed_version) != (
        wanted.patients,
        wanted.others,
        wanted.other_patients,
        SEED_VERSION,
    ):
        return False
    try:
        with env.connect(url) as conn:
            big = conn.execute(
                "SELECT count(*) FROM patients_patient WHERE organization_id = %s", [info.organization_id]
            ).fetchone()[0]
            per_org = conn.execute(
                "SELECT count(*) FILTER (WHERE c = %s), count(*) FROM ("
                " SELECT organization_id, count(*) AS c FROM patients_patient GROUP BY organization_id) t",
                [info.other_patients],
            ).fetchone()
            key = conn.execute(
                "SELECT 1 FROM accounts_apikey WHERE key_hash = %s AND revoked_at IS NULL",
                [hashlib.sha256(info.api_key.encode()).hexdigest()],
            ).fetchone()
    except psycopg.Error:
        return False
    return big == info.patients and per_org[1] == info.others + 1 and per_org[0] >= info.others and key is not None


FUNCTIONS = """
CREATE FUNCTION pg_temp.bench_uuid(kind text, practice int, n bigint) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT overlay(overlay(md5(kind || ':' || practice::text || ':' || n::text)
                                 PLACING '4' FROM 13) PLACING '8' FROM 17)::uuid $$;
-- A deterministic pick in [0, m) for (key, salt).
CREATE FUNCTION pg_temp.r(k bigint, salt int, m int) RETURNS int
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT abs(hashint8extended(k, salt) % m)::int $$;
CREATE FUNCTION pg_temp.clean(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT regexp_replace(lower(t), '[^a-z]', '', 'g') $$;
-- The patient's creation time, from the same pick every statement makes (activities and consents follow it).
CREATE FUNCTION pg_temp.created(k bigint) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT pg_temp.t0() - pg_temp.r(k, 16, 1576800) * interval '1 minute' $$;
CREATE FUNCTION pg_temp.consonants(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT upper(rpad(left(regexp_replace(upper(t), '[^B-DF-HJ-NP-TV-Z]', '', 'g'), 3), 3, 'X')) $$;
"""

PATIENTS_SQL = """
INSERT INTO patients_patient (
    id, organization_id, created_at, updated_at, title, first_name, last_name, preferred_name, ethnicity_code,
    date_of_birth, gender, fiscal_code, sts_opposition, email, phone_mobile, phone_other, address_line1,
    address_line2, city, province, postal_code, country, language, preferred_contact_method, preferred_contact_time,
    sms_opt_out, email_opt_out, whatsapp_opt_out, medical_alert, note, custom_fields, status, archived_at,
    status_before_archive, merged_at, contact_attempts, lead_source_id, location_id, merged_into_id,
    referred_by_patient_id, dentist_practitioner_id, hygienist_practitioner_id, default_price_list_id
)
SELECT
    pg_temp.bench_uuid('patient', idx, n), org_id,
    pg_temp.created(k),
    pg_temp.t0() - (age_min * (1 - power(pg_temp.r(k, 17, 1000) / 1000.0, 4))) * interval '1 minute',
    CASE WHEN pg_temp.r(k, 30, 100) < 4 THEN (CASE WHEN female THEN 'Dott.ssa' ELSE 'Dott.' END) END,
    first_name, last_name,
    CASE WHEN pg_temp.r(k, 31, 100) < 2 THEN left(first_name, 4) END,
    NULL,
    dob,
    CASE WHEN pg_temp.r(k, 32, 100) = 0 THEN 'other' WHEN female THEN 'female' ELSE 'male' END,
    CASE WHEN dob IS NOT NULL AND pg_temp.r(k, 33, 100) < 75 THEN
        pg_temp.consonants(last_name) || pg_temp.consonants(first_name) || to_char(dob, 'YY')
        || substr('ABCDEHLMPRST', extract(month FROM dob)::int, 1)
        || lpad((extract(day FROM dob)::int + CASE WHEN female THEN 40 ELSE 0 END)::text, 2, '0')
        || v.towns[1 + pg_temp.r(k, 34, cardinality(v.towns))] || chr(65 + pg_temp.r(k, 35, 26))
    END,
    pg_temp.r(k, 36, 1000) < 20,
    CASE WHEN has_email THEN
        CASE pg_temp.r(k, 7, 4)
            WHEN 0 THEN pg_temp.clean(first_name) || '.' || pg_temp.clean(last_name)
            WHEN 1 THEN pg_temp.clean(first_name) || '.' || pg_temp.clean(last_name) || (n % 100)
            WHEN 2 THEN left(pg_temp.clean(first_name), 1) || pg_temp.clean(last_name) || n
            ELSE pg_temp.clean(first_name) || pg_temp.clean(last_name) || (n % 1000)
        END || '@' || v.domains[1 + pg_temp.r(k, 37, cardinality(v.domains))]
    END,
    CASE WHEN has_mobile THEN
        '+39 3' || lpad(pg_temp.r(k, 10, 100)::text, 2, '0') || ' ' || lpad(pg_temp.r(k, 11, 10000000)::text, 7, '0')
    END,
    CASE WHEN pg_temp.r(k, 12, 100) < 10 THEN
        '+39 0' || lpad(pg_temp.r(k, 13, 100)::text, 2, '0') || ' ' || lpad(pg_temp.r(k, 14, 1000000)::text, 6, '0')
    END,
    CASE WHEN has_address THEN
        v.streets[1 + pg_temp.r(k, 20, cardinality(v.streets))] || ' ' || (1 + pg_temp.r(k, 38, 180))
    END,
    CASE WHEN has_address AND pg_temp.r(k, 39, 100) < 8 THEN 'Scala ' || chr(65 + pg_temp.r(k, 40, 4)) END,
    CASE WHEN has_address THEN v.cities[city_i] END,
    CASE WHEN has_address THEN v.provinces[city_i] END,
    CASE WHEN has_address THEN v.postcodes[city_i] END,
    'IT',
    CASE WHEN pg_temp.r(k, 41, 100) < 85 THEN 'it' WHEN pg_temp.r(k, 41, 100) < 93 THEN 'en' END,
    (ARRAY['phone', 'phone', 'phone', 'sms', 'sms', 'whatsapp', 'whatsapp', 'email', 'email', NULL])
        [1 + pg_temp.r(k, 22, 10)],
    CASE WHEN pg_temp.r(k, 42, 100) < 20 THEN
        (ARRAY['Mattina', 'Pomeriggio', 'Sera', 'Pausa pranzo'])[1 + pg_temp.r(k, 43, 4)]
    END,
    pg_temp.r(k, 44, 1000) < 50, pg_temp.r(k, 45, 1000) < 80, pg_temp.r(k, 46, 1000) < 30,
    CASE WHEN pg_temp.r(k, 47, 100) < 3 THEN
        (ARRAY['Allergia alla penicillina', 'Anticoagulanti', 'Diabete tipo 2', 'Portatore di pacemaker'])
            [1 + pg_temp.r(k, 48, 4)]
    END,
    CASE WHEN pg_temp.r(k, 49, 100) < 10 THEN
        (ARRAY['Preferisce appuntamenti il sabato', 'Chiamare dopo le 18', 'Accompagnato dal figlio',
               'Paziente ansioso: spiegare ogni passaggio'])[1 + pg_temp.r(k, 50, 4)]
    END,
    CASE WHEN pg_temp.r(k, 51, 100) < 20 THEN
        jsonb_build_object('insurance', v.insurances[1 + pg_temp.r(k, 52, cardinality(v.insurances))])
        || CASE WHEN pg_temp.r(k, 53, 2) = 0
                THEN jsonb_build_object('policyNumber', 'P' || lpad(pg_temp.r(k, 54, 100000000)::text, 8, '0'))
                ELSE '{}'::jsonb END
    ELSE '{}'::jsonb END,
    CASE WHEN archived THEN 'archived' ELSE status END,
    CASE WHEN archived THEN pg_temp.t0() - (age_min * pg_temp.r(k, 55, 1000) / 1000.0) * interval '1 minute' END,
    CASE WHEN archived THEN status ELSE '' END,
    CASE WHEN merged THEN pg_temp.t0() - (age_min * pg_temp.r(k, 56, 1000) / 1000.0) * interval '1 minute' END,
    pg_temp.r(k, 25, 8),
    CASE WHEN pg_temp.r(k, 57, 100) < 60 THEN
        pg_temp.bench_uuid('lead', idx, 1 + pg_temp.r(k, 24, cardinality(v.lead_sources)))
    END,
    pg_temp.bench_uuid('loc', idx, 1 + pg_temp.r(k, 23, cardinality(v.locations))),
    NULL, NULL,  -- merged_into_id, referred_by_patient_id: RELATIONS_SQL, once every patient exists
    NULL, NULL, NULL
FROM (
    SELECT b.*,
        CASE WHEN female THEN v.first_f[1 + pg_temp.r(k, 2, cardinality(v.first_f))]
             ELSE v.first_m[1 + pg_temp.r(k, 2, cardinality(v.first_m))] END AS first_name,
        CASE WHEN pg_temp.r(k, 3, 100) < 72
             THEN v.surnames[1 + floor(cardinality(v.surnames) * power(pg_temp.r(k, 4, 1000000) / 1000000.0, 1.4))::int]
             ELSE v.roots[1 + pg_temp.r(k, 5, cardinality(v.roots))]
                  || v.suffixes[1 + pg_temp.r(k, 6, cardinality(v.suffixes))]
        END AS last_name,
        CASE WHEN pg_temp.r(k, 18, 100) < 95 THEN date '1935-01-01' + pg_temp.r(k, 19, 31000) END AS dob,
        CASE WHEN pg_temp.r(k, 21, 100) < 60 THEN 1 + idx % cardinality(v.cities)
             ELSE 1 + pg_temp.r(k, 29, cardinality(v.cities)) END AS city_i,
        pg_temp.r(k, 8, 100) < 88 AS has_email,
        pg_temp.r(k, 8, 100) >= 88 OR pg_temp.r(k, 9, 100) < 90 AS has_mobile,
        pg_temp.r(k, 27, 100) < 85 AS has_address,
        CASE WHEN pg_temp.r(k, 15, 1000) < 50 THEN 'enquiry' WHEN pg_temp.r(k, 15, 1000) < 450 THEN 'lead'
             WHEN pg_temp.r(k, 15, 1000) < 920 THEN 'patient' WHEN pg_temp.r(k, 15, 1000) < 985 THEN 'inactive'
             ELSE 'deceased' END AS status,
        NOT recall AND n % 25 = 7 AS archived,
        NOT recall AND n % 1000 = 999 AS merged,
        pg_temp.r(k, 16, 1576800) AS age_min
    FROM (
        SELECT o.idx, o.org_id, o.patients, n, o.idx::bigint * 10000000000 + n AS k,
            pg_temp.r(o.idx::bigint * 10000000000 + n, 1, 1000) < 540 AS female,
            CASE WHEN o.idx = 0 THEN n % %(step)s = 0 AND n / %(step)s <= %(export_rows)s ELSE n % 10 = 0 END AS recall
        FROM bench_org o CROSS JOIN LATERAL generate_series(1 + %(worker)s, o.patients, %(workers)s) AS n
    ) b
) x
"""

# Links between patients of one practice: a few duplicates merged into the record before them (never one of the
# "Recall 2025" patients) and 3% referred by an earlier patient.
RELATIONS_SQL = """
UPDATE patients_patient p SET merged_into_id = x.merged_into, referred_by_patient_id = x.referred_by
FROM (
    SELECT pg_temp.bench_uuid('patient', o.idx, n) AS id,
        CASE WHEN n % 1000 = 999 AND NOT CASE WHEN o.idx = 0 THEN n % %(step)s = 0 AND n / %(step)s <= %(export_rows)s
                                              ELSE n % 10 = 0 END
             THEN pg_temp.bench_uuid('patient', o.idx, n - 1) END AS merged_into,
        CASE WHEN n > 1 AND pg_temp.r(k, 58, 100) < 3
             THEN pg_temp.bench_uuid('patient', o.idx, n - 1 - pg_temp.r(k, 26, (n - 1)::int)) END AS referred_by
    FROM bench_org o CROSS JOIN LATERAL generate_series(1 + %(worker)s, o.patients, %(workers)s) AS n
    CROSS JOIN LATERAL (SELECT o.idx::bigint * 10000000000 + n AS k) kk
) x
WHERE p.id = x.id AND (x.merged_into IS NOT NULL OR x.referred_by IS NOT NULL)
"""

# The predicate that decides "Recall 2025" (tag 1) must be the one PATIENTS_SQL used to keep those rows active.
PATIENT_TAGS_SQL = """
INSERT INTO patients_patienttag (id, organization_id, patient_id, tag_id, created_at, updated_at)
SELECT pg_temp.bench_uuid('ptag', o.idx, n * 16 + t.i), o.org_id, pg_temp.bench_uuid('patient', o.idx, n),
       pg_temp.bench_uuid('tag', o.idx, t.i), pg_temp.t0() - pg_temp.r(k, 60 + t.i, 500000) * interval '1 minute',
       pg_temp.t0()
FROM bench_org o CROSS JOIN LATERAL generate_series(1 + %(worker)s, o.patients, %(workers)s) AS n
CROSS JOIN LATERAL (SELECT o.idx::bigint * 10000000000 + n AS k) kk
JOIN bench_tag t ON CASE
    WHEN t.share IS NULL THEN
        CASE WHEN o.idx = 0 THEN n % %(step)s = 0 AND n / %(step)s <= %(export_rows)s ELSE n % 10 = 0 END
    ELSE pg_temp.r(k, 100 + t.i, 1000) < t.share END
"""

ACTIVITIES_SQL = """
INSERT INTO patients_activity (id, organization_id, patient_id, kind, summary, data, actor_id, created_at, updated_at)
SELECT pg_temp.bench_uuid('act', o.idx, n * 8 + a.i), o.org_id, pg_temp.bench_uuid('patient', o.idx, n), a.kind,
       a.summary, a.data::jsonb, CASE WHEN a.i > 0 THEN o.owner_id END,
       at, at
FROM bench_org o CROSS JOIN LATERAL generate_series(1 + %(worker)s, o.patients, %(workers)s) AS n
JOIN (VALUES
    (0, 'created', '', '{}'),
    (1, 'call', '', '{"channel": "phone", "outcome": "no_answer", "attempt": 1}'),
    (2, 'message', '', '{"channel": "whatsapp", "outcome": "delivered", "attempt": 2}'),
    (3, 'note', 'Richiede preventivo per impianto', '{}'),
    (4, 'status_changed', '', '{"from": "lead", "to": "patient"}')
) AS a(i, kind, summary, data) ON a.i = 0 OR n % 10 = 0
CROSS JOIN LATERAL (SELECT pg_temp.created(o.idx::bigint * 10000000000 + n) AS created) c
CROSS JOIN LATERAL (SELECT c.created + (pg_temp.t0() - c.created) * (a.i / 5.0) AS at) t
"""

CONSENTS_SQL = """
INSERT INTO patients_marketingconsent (id, organization_id, patient_id, channel, status, source, evidence,
                                       recorded_at, recorded_by_id, created_at, updated_at)
SELECT pg_temp.bench_uuid('consent', o.idx, n * 4 + c.i), o.org_id, pg_temp.bench_uuid('patient', o.idx, n), c.channel,
       c.status, c.source, c.evidence, at, o.owner_id, at, at
FROM bench_org o CROSS JOIN LATERAL generate_series(1 + %(worker)s, o.patients, %(workers)s) AS n
JOIN (VALUES
    (1, 'email', 'granted', 'form', 'Modulo web v3: casella newsletter spuntata', 4),
    (2, 'sms', 'withdrawn', 'phone', 'Chiamata in segreteria, richiesta verbale', 12),
    (3, 'whatsapp', 'granted', 'in_person', 'Modulo cartaceo firmato in sede', 7)
) AS c(i, channel, status, source, evidence, each_n) ON n % c.each_n = 0
CROSS JOIN LATERAL (SELECT least(pg_temp.created(o.idx::bigint * 10000000000 + n) + c.i * interval '1 day',
                                pg_temp.t0()) AS at) t
"""


def _vocab_rows():
    cities = data.CITIES
    return {
        "first_f": data.FIRST_NAMES_FEMALE,
        "first_m": data.FIRST_NAMES_MALE,
        "surnames": data.SURNAMES,
        "roots": data.SURNAME_ROOTS,
        "suffixes": data.SURNAME_SUFFIXES,
        "cities": [c[0] for c in cities],
        "provinces": [c[1] for c in cities],
        "postcodes": [c[2] for c in cities],
        "streets": data.STREETS,
        "towns": data.BIRTH_TOWN_CODES,
        "domains": [d for d, weight in data.EMAIL_DOMAINS for _ in range(weight // 10)],
        "insurances": data.INSURANCES,
        "locations": data.LOCATIONS,
        "lead_sources": data.LEAD_SOURCES,
    }


def _with_constants(statement: str) -> str:
    """The statement with its `v.<list>` vocabulary references as array constants (bound client-side, so they are
    plan constants: reading them from a table row would detoast the array on every subscript) and the modulo
    operator escaped from psycopg's parameter markers."""
    text = re.sub(r"%%\((\w+)\)s", r"%(\1)s", statement.replace("%", "%%"))
    return re.sub(r"\bv\.(\w+)", lambda m: f"(%({m.group(1)})s::text[])", text)


SEEDED_TABLES = (
    "patients_patient",
    "patients_patienttag",
    "patients_activity",
    "patients_marketingconsent",
    "patients_searchterm",
    "patients_patientfacet",
)


POSTINGS_KEY = "patients_searchposting_pkey"


def _secondary_indexes(conn) -> list[tuple[str, str]]:
    """(name, definition) of the seeded tables' indexes that back no constraint: dropped during the load and
    rebuilt from their exact definitions afterwards (the usual bulk-load practice; far faster than maintaining a
    trigram GIN index row by row)."""
    return conn.execute(
        """
        SELECT i.indexname, i.indexdef FROM pg_indexes i
        WHERE i.schemaname = 'public' AND i.tablename = ANY(%s)
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = (quote_ident(i.indexname))::regclass)
        ORDER BY i.indexname
        """,
        [list(SEEDED_TABLES)],
    ).fetchall()


def _session(url: str, *, orgs: list[tuple], seed_time: datetime.datetime) -> psycopg.Connection:
    """A loading connection: the helper functions, the practices (bench_org) and the tag plan (bench_tag) as
    session-local temporary objects."""
    conn = env.connect(url)
    conn.execute("SET synchronous_commit = off")
    # The patients table's index-maintenance triggers (search vocabulary, counters) stay off during the load: the
    # two loading connections would queue on the same vocabulary rows. patients_rebuild_derived() fills both
    # tables afterwards, set-based, exactly as the triggers would have.
    conn.execute("SET session_replication_role = replica")
    conn.execute("SET jit = off")  # compiling these wide expressions costs seconds and saves nothing
    conn.execute("SET maintenance_work_mem = '512MB'")
    conn.execute("SET max_parallel_maintenance_workers = 2")
    conn.execute(
        "CREATE FUNCTION pg_temp.t0() RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS "
        f"$$ SELECT '{seed_time.isoformat()}'::timestamptz $$"
    )
    conn.execute(FUNCTIONS)
    vocab = _vocab_rows()
    conn.execute(
        "CREATE TEMP TABLE bench_vocab AS SELECT " + ", ".join(f"%({name})s::text[] AS {name}" for name in vocab),
        vocab,
    )
    conn.execute(
        "CREATE TEMP TABLE bench_org (idx int PRIMARY KEY, org_id uuid, owner_id uuid, patients int, city text)"
    )
    conn.execute("CREATE TEMP TABLE bench_tag (i int, name text, color text, share int)")
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO bench_org VALUES (%s, %s, %s, %s, %s)", orgs)
        cur.executemany(
            "INSERT INTO bench_tag VALUES (%s, %s, %s, %s)",
            [(i, name, color, share) for i, (name, color, share) in enumerate(data.TAGS, start=1)],
        )
    return conn


def _parallel(connections: list[psycopg.Connection], jobs: list) -> list:
    """Run jobs (callables taking a connection) on the connections, one job per connection at a time."""
    pending = list(enumerate(jobs))
    results: list = [None] * len(jobs)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(conn):
        while True:
            with lock:
                if not pending or errors:
                    return
                index, job = pending.pop(0)
            try:
                results[index] = job(conn)
            except BaseException as exc:  # reported on the main thread
                with lock:
                    errors.append(exc)
                return

    threads = [threading.Thread(target=work, args=(conn,)) for conn in connections]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def seed(url: str, *, patients: int, others: int, other_patients: int, log, workers: int | None = None) -> SeedInfo:
    """Seed an empty, migrated database. Returns what the benchmark needs to know about it."""
    started = time.monotonic()
    created = json.loads(
        env.manage(
            url,
            "create_practice",
            "--name",
            "Studio Dentistico Benchmark",
            "--owner-email",
            OWNER_EMAIL,
            "--owner-name",
            "Bench Owner",
            "--country",
            "IT",
            "--api-key",
            "--json",
        ).strip()
    )
    info = SeedInfo(
        patients=patients,
        others=others,
        other_patients=other_patients,
        organization_id=created["organizationId"],
        api_key=created["apiKey"],
    )
    with env.connect(url) as conn:
        owner_id = conn.execute(
            "SELECT user_id FROM accounts_membership WHERE organization_id = %s", [info.organization_id]
        ).fetchone()[0]
    orgs = [(0, info.organization_id, owner_id, patients, data.CITIES[0][0])] + [
        (i, det_uuid("org", i, 0), det_uuid("user", i, 0), other_patients, data.CITIES[i % len(data.CITIES)][0])
        for i in range(1, others + 1)
    ]
    seed_time = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    workers = workers or max(1, min(4, os.cpu_count() or 1))
    sessions = [_session(url, orgs=orgs, seed_time=seed_time) for _ in range(workers)]
    try:
        conn = sessions[0]
        with conn.transaction():
            conn.execute(
                """
                INSERT INTO accounts_organization (id, name, kind, country, region, clinical_workspace_available,
                    pms_native_writes_enabled, pms_system_of_record, pms_authority_generation, access_generation,
                    timezone, created_at, updated_at)
                SELECT org_id, 'Studio Dentistico ' || city || ' ' || idx, 'practice', 'IT', 'eu', false, false,
                       'external', 0, 0, 'Europe/Rome', now(), now()
                FROM bench_org WHERE idx > 0;
                INSERT INTO accounts_user (id, password, last_login, is_superuser, email, name, is_active, is_staff,
                    created_at, updated_at)
                SELECT owner_id, '!', NULL, false, 'owner' || idx || '@bench-practice.example', 'Owner ' || idx, true,
                       false, now(), now()
                FROM bench_org WHERE idx > 0;
                INSERT INTO accounts_membership (id, organization_id, user_id, role, default_workspace,
                    hide_other_workspace, access_generation, created_at, updated_at)
                SELECT pg_temp.bench_uuid('member', idx, 0), org_id, owner_id, 'owner', NULL, false, 0, now(), now()
                FROM bench_org WHERE idx > 0;
                INSERT INTO patients_location (id, organization_id, name, archived_at, created_at, updated_at)
                SELECT pg_temp.bench_uuid('loc', o.idx, i), o.org_id, v.locations[i], NULL, now(), now()
                FROM bench_org o, bench_vocab v, generate_series(1, cardinality(v.locations)) AS i;
                INSERT INTO patients_leadsource (id, organization_id, name, archived_at, created_at, updated_at)
                SELECT pg_temp.bench_uuid('lead', o.idx, i), o.org_id, v.lead_sources[i], NULL, now(), now()
                FROM bench_org o, bench_vocab v, generate_series(1, cardinality(v.lead_sources)) AS i;
                INSERT INTO patients_tag (id, organization_id, name, color, created_at, updated_at)
                SELECT pg_temp.bench_uuid('tag', o.idx, t.i), o.org_id, t.name, t.color, now(), now()
                FROM bench_org o CROSS JOIN bench_tag t;
                """
            )
        indexes = _secondary_indexes(conn)
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        log(f"dropped {len(indexes)} secondary indexes for the load; loading on {workers} connections")
        params = {"step": export_step(patients), "export_rows": EXPORT_TAG_ROWS, "workers": workers, **_vocab_rows()}
        for label, statement in (
            ("patients", PATIENTS_SQL),
            ("merge and referral links on", RELATIONS_SQL),
            ("patient tags", PATIENT_TAGS_SQL),
            ("timeline entries", ACTIVITIES_SQL),
            ("consents", CONSENTS_SQL),
        ):
            t0 = time.monotonic()
            text = _with_constants(statement)
            # Worker w inserts the n ≡ w (mod workers) share of every practice.
            counts = _parallel(
                sessions,
                [lambda c, w=w, t=text: c.execute(t, {**params, "worker": w}).rowcount for w in range(workers)],
            )
            verb = "set" if statement is RELATIONS_SQL else "inserted"
            log(f"{verb} {sum(counts):,} {label} in {time.monotonic() - t0:.1f}s")
        t0 = time.monotonic()
        # The postings' primary key is built once after the rebuild has appended their rows (a sorted index build),
        # instead of taking 12 million ordered insertions at 1,000,000 patients.
        conn.execute(f"ALTER TABLE patients_searchposting DROP CONSTRAINT {POSTINGS_KEY}")
        # Statistics first: the rebuild's statements are planned now, right after the load.
        conn.execute("ANALYZE patients_patient, patients_patienttag")
        conn.execute("SELECT patients_rebuild_derived()")
        terms = conn.execute("SELECT count(*) FROM patients_searchterm").fetchone()[0]
        log(
            f"built the search vocabulary ({terms:,} terms), postings, facets and patient counters in "
            f"{time.monotonic() - t0:.1f}s"
        )
        t0 = time.monotonic()
        conn.execute(
            f"ALTER TABLE patients_searchposting ADD CONSTRAINT {POSTINGS_KEY} PRIMARY KEY "
            "(organization_id, term, active, patient_created_at, patient_id)"
        )
        log(f"built the postings' primary key in {time.monotonic() - t0:.1f}s")
        t0 = time.monotonic()
        # Largest first, so the trigram GIN index is not left running alone at the end.
        ordered = sorted(indexes, key=lambda item: "gin" not in item[1])
        _parallel(sessions, [lambda c, d=definition: c.execute(d) for _, definition in ordered])
        log(f"rebuilt {len(indexes)} indexes in {time.monotonic() - t0:.1f}s")
    finally:
        for session in sessions:
            session.close()
    t0 = time.monotonic()
    with env.connect(url) as conn:
        conn.execute("VACUUM (ANALYZE)")
    log(f"VACUUM ANALYZE in {time.monotonic() - t0:.1f}s")
    info.seed_seconds = round(time.monotonic() - started, 1)
    info.save(url)
    log(f"seeded in {info.seed_seconds:.1f}s")
    return info
