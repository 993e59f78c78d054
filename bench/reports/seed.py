"""The reports benchmark's database: the patients benchmark's seed (bench.patients.seed, reused as it is: its search
vocabulary, postings, facets and counters stay consistent with the patients) in a database of its own, then what the
seven reports read, set-based (INSERT … SELECT FROM generate_series, picks by pg_temp.r(hash, salt, m), ids by
pg_temp.bench_uuid(kind, practice, n)), in proportion to each practice's patients N (the measured practice has
1,000,000; one other practice has 10,000, so every read has to filter by tenant):

- Team, catalogue, practitioners: 5 members besides the owner, PRACTITIONERS practitioners, the treatment catalogue
  and the default pipeline (bench.crm.seed's statements, with this benchmark's practitioner count).
- Journeys (bench.crm.seed.JOURNEYS_SQL): 0.3 N over the default pipeline, 58% open across the five open stages,
  25% won, 17% lost, entered their stage within 180 days (skewed recent), values from the treatment ±20%.
- Appointments (bench.crm.seed.APPOINTMENTS_SQL): 0.28 N, PRACTITIONERS x 16 half-hour slots a day, 4 in 5 taken:
  ~2 years (80% past: completed, no-show, cancelled; the rest booked, confirmed, cancelled).
- First contacts (patients_activity): 85% of the records the patients seed left without a call/message get one
  outbound call (55%) or message (45%) after creation (seconds ~ 259,200 u^6: a third within 5 minutes, median
  about an hour), made by a member (80%) or the system (20%), never in the future; 15% also get an inbound message
  first (not contact).
- Messaging: an SMS, WhatsApp and e-mail connection per practice; 40% of patients hold one conversation; each has
  1-4 messages over the last 2 years (alternating out/in, outbound delivered/read/sent/failed); one campaign a week
  for 2 years (104), each to the conversation holders of a block of patients on its connection (~2,900), 92%
  released with an outbound marketing message (delivered, read, sent, failed, undelivered), 8% skipped, 1%
  unsubscribed, 6% replied to.
- Deposits: 0.06 N over 2 years: draft 5%, sent (outstanding) 10%, paid 62%, expired 10%, cancelled 5%, refunded
  (in part or whole, after paying) 8%.
- Reviews: a review source per location, 0.015 N reviews over 2 years, ratings skewed to 5, 60% with a reply.

The layer is rebuilt when missing, when the patients seed was rebuilt, or when older than STALE_AFTER (its dates are
relative to the seed time and the 30-day range moves with today). What was seeded is kept in the database (table
bench_reports_seed)."""

import contextlib
import datetime
import time

from psycopg import sql
from psycopg.types.json import Jsonb

from bench import env
from bench.crm import seed as crm
from bench.patients import seed

DEFAULT_URL = env.DEFAULT_URL + "_reports"  # practice_crm_bench_reports
PATIENTS, OTHERS, OTHER_PATIENTS = 1_000_000, 1, 10_000
PRACTITIONERS = 30
PER_PATIENT = {"journeys": 0.3, "tasks": 0.0, "appointments": 0.28}
STALE_AFTER = datetime.timedelta(hours=12)
REPORTS_SEED_VERSION = 1
TABLES = (
    "journeys_journey",
    "appointments_appointment",
    "patients_activity",
    "conversations_channelconnection",
    "conversations_conversation",
    "conversations_message",
    "campaigns_campaign",
    "campaigns_campaignrecipient",
    "deposits_depositrequest",
    "reputation_reviewsource",
    "reputation_review",
)
COUNTED = {  # what the marker checks in the measured practice
    "journeys": "journeys_journey",
    "appointments": "appointments_appointment",
    "messages": "conversations_message",
    "recipients": "campaigns_campaignrecipient",
    "deposits": "deposits_depositrequest",
    "reviews": "reputation_review",
}

RESET_SQL = """
DELETE FROM patients_activity WHERE data ? 'bench_reports';
TRUNCATE campaigns_campaignrecipient, campaigns_campaign, conversations_message, conversations_conversation,
         conversations_channelconnection, deposits_depositrequest, reputation_review, reputation_reviewsource,
         appointments_appointment, journeys_journey CASCADE;
"""

CONNECTIONS_SQL = """
INSERT INTO conversations_channelconnection (id, organization_id, created_at, updated_at, kind, name, address,
    routing_token, business_account_id, credentials_encrypted, credential_keys, status, health, health_reason,
    health_changed_at, disconnected_at)
SELECT pg_temp.bench_uuid('rpt-conn', o.idx, c.i), o.org_id, pg_temp.t0() - interval '800 days', pg_temp.t0(),
       c.kind, c.name, c.kind || '-' || o.idx || '@bench-practice.example', md5('rpt-conn:' || o.idx || ':' || c.i),
       '', '', '[]'::jsonb, 'active', 'healthy', '', NULL, NULL
FROM bench_org o CROSS JOIN (VALUES (1, 'sms', 'SMS'), (2, 'messaging_app', 'WhatsApp'), (3, 'email', 'E-mail'))
    AS c(i, kind, name)
"""

# Worker w inserts the n ≡ w (mod workers) share of every practice's patients.
FIRST_CONTACT_SQL = """
INSERT INTO patients_activity (id, organization_id, patient_id, kind, summary, data, actor_id, created_at, updated_at)
SELECT pg_temp.bench_uuid('rpt-act', o.idx, n * 2 + x.i), o.org_id, pg_temp.bench_uuid('patient', o.idx, n),
       x.kind, '', x.data, x.actor, x.at, x.at
FROM bench_org o CROSS JOIN LATERAL generate_series(1 + %(worker)s, o.patients, %(workers)s) AS n
CROSS JOIN LATERAL (SELECT o.idx::bigint * 10000000000 + n AS k) kk
CROSS JOIN LATERAL (SELECT pg_temp.created(k) AS created,
                           30 + 259200 * power(pg_temp.r(k, 201, 1000000) / 1000000.0, 6) AS delay) c
CROSS JOIN LATERAL (VALUES
    (0, CASE WHEN pg_temp.r(k, 202, 100) < 55 THEN 'call' ELSE 'message' END,
     CASE WHEN pg_temp.r(k, 202, 100) < 55
          THEN '{"channel": "phone", "direction": "outbound", "outcome": "answered", "bench_reports": 1}'
          ELSE '{"channel": "sms", "direction": "outbound", "outcome": "sent", "bench_reports": 1}' END::jsonb,
     CASE WHEN pg_temp.r(k, 203, 100) < 20 THEN NULL WHEN pg_temp.r(k, 203, 100) < 35 THEN o.owner_id
          ELSE pg_temp.bench_uuid('crm-user', o.idx, 1 + pg_temp.r(k, 204, 5)) END,
     c.created + c.delay * interval '1 second', n % 10 <> 0 AND pg_temp.r(k, 200, 100) < 85),
    (1, 'message', '{"channel": "sms", "direction": "inbound", "bench_reports": 1}'::jsonb, NULL::uuid,
     c.created + interval '20 seconds', pg_temp.r(k, 205, 100) < 15)
) AS x(i, kind, data, actor, at, wanted)
WHERE x.wanted AND x.at <= pg_temp.t0()
"""

CONVERSATIONS_SQL = """
INSERT INTO conversations_conversation (id, organization_id, created_at, updated_at, patient_id, connection_id,
    channel, contact_address, provider_thread_id, status, snoozed_until, assignee_id, last_message_at,
    last_inbound_at)
SELECT pg_temp.bench_uuid('rpt-conv', o.idx, n), o.org_id, pg_temp.t0() - interval '740 days', pg_temp.t0(),
       pg_temp.bench_uuid('patient', o.idx, n), pg_temp.bench_uuid('rpt-conn', o.idx, ci),
       (ARRAY['sms', 'messaging_app', 'email'])[ci], 'contact' || n || '@example.org', '', 'open', NULL, NULL,
       pg_temp.t0() - pg_temp.r(k, 213, 1051200) * interval '1 minute', NULL
FROM bench_org o CROSS JOIN LATERAL generate_series(1 + %(worker)s, o.patients, %(workers)s) AS n
CROSS JOIN LATERAL (SELECT o.idx::bigint * 10000000000 + n AS k) kk
CROSS JOIN LATERAL (SELECT 1 + pg_temp.r(k, 211, 3) AS ci) c
WHERE pg_temp.r(k, 210, 100) < 40
"""

# The conversations' own traffic: 1-4 messages over the last 2 years.
MESSAGES_SQL = """
INSERT INTO conversations_message (id, organization_id, created_at, updated_at, conversation_id, direction, channel,
    status, body, subject, provider_message_id, occurred_at, status_changed_at, error_code, purpose, source,
    sent_by_id, outbound, attempts, next_attempt_at, held_reason, sandbox)
SELECT pg_temp.bench_uuid('rpt-msg', o.idx, n * 8 + m), o.org_id, at, at,
       pg_temp.bench_uuid('rpt-conv', o.idx, n), dir, (ARRAY['sms', 'messaging_app', 'email'])[ci],
       CASE WHEN dir = 'inbound' THEN 'received'
            ELSE (ARRAY['delivered', 'delivered', 'delivered', 'read', 'read', 'sent', 'failed', 'queued'])
                 [1 + pg_temp.r(k * 8 + m, 216, 8)] END,
       'Buongiorno, la ricontattiamo per il suo appuntamento.', '', '', at, at, '', 'service', '', NULL,
       '{}'::jsonb, 1, NULL, '', false
FROM bench_org o CROSS JOIN LATERAL generate_series(1 + %(worker)s, o.patients, %(workers)s) AS n
CROSS JOIN LATERAL (SELECT o.idx::bigint * 10000000000 + n AS k) kk
CROSS JOIN LATERAL (SELECT 1 + pg_temp.r(k, 211, 3) AS ci) c
CROSS JOIN LATERAL generate_series(1, 1 + pg_temp.r(k, 214, 4)) AS m
CROSS JOIN LATERAL (SELECT CASE WHEN m % 2 = 1 THEN 'outbound' ELSE 'inbound' END AS dir,
                           pg_temp.t0() - pg_temp.r(k * 8 + m, 215, 1051200) * interval '1 minute' AS at) x
WHERE pg_temp.r(k, 210, 100) < 40
"""

CAMPAIGNS_SQL = """
INSERT INTO campaigns_campaign (id, organization_id, created_at, updated_at, name, status, connection_id,
    template_id, saved_view_id, audience_filters, scheduled_at, hourly_limit, daily_limit, content, launched_at,
    launched_by_id, paused_at, pause_reason, completed_at, cancelled_at, created_by_id, hour_window_start,
    hour_released, day_window_start, day_released, release_after, release_heartbeat_at)
SELECT pg_temp.bench_uuid('rpt-camp', o.idx, i), o.org_id, x.launched - interval '2 days',
       x.launched + interval '1 day',
       'Campagna ' || i, 'completed', pg_temp.bench_uuid('rpt-conn', o.idx, 1 + i % 3), NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, x.launched, o.owner_id, NULL, '', x.launched + interval '6 hours', NULL, o.owner_id, NULL, 0, NULL,
       0, NULL, NULL
FROM bench_org o CROSS JOIN generate_series(1, %(campaigns)s) AS i
CROSS JOIN LATERAL (SELECT pg_temp.t0() - (i * 7 - 3) * interval '1 day'
                           + pg_temp.r(o.idx * 1000 + i, 220, 480) * interval '1 minute' AS launched) x
"""

# Campaign i goes to the holders of a conversation on its connection among a block of patients (block i of
# `span`, wrapping round the practice): about span x 40% / 3 recipients.
RECIPIENTS_BASE = """
SELECT o.idx, o.org_id, i, n, kk.k, x.launched,
       pg_temp.bench_uuid('rpt-camp', o.idx, i) AS campaign_id,
       pg_temp.bench_uuid('rpt-conv', o.idx, n) AS conversation_id,
       (ARRAY['sms', 'messaging_app', 'email'])[1 + i % 3] AS channel,
       pg_temp.r(kk.k * 200 + i, 221, 1000) AS pick
FROM bench_org o CROSS JOIN generate_series(1, %(campaigns)s) AS i
CROSS JOIN LATERAL (SELECT least(o.patients, %(span)s::bigint * o.patients / 1000000)::int AS span) s
CROSS JOIN LATERAL generate_series(1, s.span) AS j
CROSS JOIN LATERAL (SELECT 1 + ((i - 1) * s.span + j - 1) % o.patients AS n) nn
CROSS JOIN LATERAL (SELECT o.idx::bigint * 10000000000 + n AS k) kk
CROSS JOIN LATERAL (SELECT pg_temp.t0() - (i * 7 - 3) * interval '1 day'
                           + pg_temp.r(o.idx * 1000 + i, 220, 480) * interval '1 minute' AS launched) x
WHERE pg_temp.r(kk.k, 210, 100) < 40 AND 1 + pg_temp.r(kk.k, 211, 3) = 1 + i % 3
"""

CAMPAIGN_MESSAGES_SQL = f"""
INSERT INTO conversations_message (id, organization_id, created_at, updated_at, conversation_id, direction, channel,
    status, body, subject, provider_message_id, occurred_at, status_changed_at, error_code, purpose, source,
    sent_by_id, outbound, attempts, next_attempt_at, held_reason, sandbox)
SELECT pg_temp.bench_uuid('rpt-cmsg', b.idx, b.n * 1000 + b.i * 2 + e.out), b.org_id, e.at, e.at, b.conversation_id,
       CASE WHEN e.out = 0 THEN 'outbound' ELSE 'inbound' END, b.channel,
       CASE WHEN e.out = 1 THEN 'received'
            WHEN b.pick < 500 THEN 'delivered' WHEN b.pick < 750 THEN 'read' WHEN b.pick < 860 THEN 'sent'
            WHEN b.pick < 900 THEN 'failed' ELSE 'undelivered' END,
       CASE WHEN e.out = 0 THEN 'Offerta di primavera: igiene a 60 euro' ELSE 'Grazie, vorrei prenotare' END,
       '', '', e.at, e.at, '', CASE WHEN e.out = 0 THEN 'marketing' ELSE 'service' END,
       CASE WHEN e.out = 0 THEN 'campaign' ELSE '' END, NULL, '{{}}'::jsonb, 1, NULL, '', false
FROM ({RECIPIENTS_BASE}) b
CROSS JOIN LATERAL (VALUES (0, b.launched + (b.pick % 120) * interval '1 minute'),
                           (1, b.launched + (120 + b.pick) * interval '1 minute')) AS e(out, at)
WHERE b.pick < 920 AND (e.out = 0 OR b.pick < 60) AND e.at <= pg_temp.t0()
"""

RECIPIENTS_SQL = f"""
INSERT INTO campaigns_campaignrecipient (id, created_at, updated_at, organization_id, campaign_id, patient_id, address,
    state, skip_reason, message_id, released_at, unsubscribed_at)
SELECT pg_temp.bench_uuid('rpt-recip', b.idx, b.n * 1000 + b.i), b.launched - interval '1 hour', b.launched,
       b.org_id, b.campaign_id, pg_temp.bench_uuid('patient', b.idx, b.n), 'contact' || b.n || '@example.org',
       CASE WHEN b.pick < 920 THEN 'released' ELSE 'skipped' END,
       CASE WHEN b.pick < 920 THEN '' ELSE 'no_consent' END,
       CASE WHEN b.pick < 920 THEN pg_temp.bench_uuid('rpt-cmsg', b.idx, b.n * 1000 + b.i * 2) END,
       CASE WHEN b.pick < 920 THEN b.launched END,
       CASE WHEN b.pick < 920 AND b.pick % 100 = 7 THEN b.launched + interval '3 hours' END
FROM ({RECIPIENTS_BASE}) b
"""

DEPOSITS_SQL = """
INSERT INTO deposits_depositrequest (id, organization_id, created_at, updated_at, patient_id, journey_id, amount,
    currency, reason, status, refunded_amount, sent_at, link_expires_at, paid_at, cancelled_at, expired_at,
    refunded_at, checkout_session_id, payment_intent_id, extra_payment_intent_ids, created_by_id)
SELECT pg_temp.bench_uuid('rpt-dep', o.idx, d), o.org_id, x.created, x.created + interval '2 days',
       pg_temp.bench_uuid('patient', o.idx, 1 + pg_temp.r(k, 230, o.patients)), NULL, x.amount,
       CASE WHEN pg_temp.r(k, 233, 100) < 95 THEN 'EUR' ELSE 'GBP' END, 'Acconto trattamento', x.status,
       CASE WHEN x.status = 'refunded' THEN CASE WHEN pg_temp.r(k, 234, 2) = 0 THEN x.amount ELSE x.amount / 2 END
            ELSE 0 END,
       CASE WHEN x.status <> 'draft' THEN x.created + interval '5 minutes' END,
       CASE WHEN x.status <> 'draft' THEN x.created + interval '7 days' END,
       CASE WHEN x.status IN ('paid', 'refunded') THEN x.created + interval '1 day' END,
       CASE WHEN x.status = 'cancelled' THEN x.created + interval '2 days' END,
       CASE WHEN x.status = 'expired' THEN x.created + interval '7 days' END,
       CASE WHEN x.status = 'refunded' THEN x.created + interval '10 days' END,
       '', '', '[]'::jsonb, o.owner_id
FROM bench_org o CROSS JOIN LATERAL generate_series(1, round(o.patients * %(deposits)s)::int) AS d
CROSS JOIN LATERAL (SELECT o.idx::bigint * 10000000000 + d AS k) kk
CROSS JOIN LATERAL (
    SELECT pg_temp.t0() - pg_temp.r(k, 231, 1051200) * interval '1 minute' AS created,
           (5 + pg_temp.r(k, 232, 96)) * 1000 AS amount,
           CASE WHEN pg_temp.r(k, 235, 100) < 5 THEN 'draft' WHEN pg_temp.r(k, 235, 100) < 15 THEN 'sent'
                WHEN pg_temp.r(k, 235, 100) < 77 THEN 'paid' WHEN pg_temp.r(k, 235, 100) < 87 THEN 'expired'
                WHEN pg_temp.r(k, 235, 100) < 92 THEN 'cancelled' ELSE 'refunded' END AS status
) x0
-- An outstanding request (sent, not paid) is one of the last 6 days: its link has not expired yet.
CROSS JOIN LATERAL (SELECT x0.status, x0.amount,
                           CASE WHEN x0.status = 'sent' THEN greatest(x0.created, pg_temp.t0() - interval '6 days')
                                ELSE x0.created END AS created) x
"""

REVIEW_SOURCES_SQL = """
INSERT INTO reputation_reviewsource (id, organization_id, created_at, updated_at, location_id, provider, name,
    account_ref, location_ref, review_url, credentials_encrypted, credential_keys, status, imported_at,
    last_synced_at, last_sync_error)
SELECT pg_temp.bench_uuid('rpt-src', o.idx, l.i), o.org_id, pg_temp.t0() - interval '800 days', pg_temp.t0(),
       pg_temp.bench_uuid('loc', o.idx, l.i), 'google_business_profile', 'Google ' || l.i, 'accounts/' || o.idx,
       'locations/' || l.i, 'https://g.page/r/bench-' || o.idx || '-' || l.i, '', '[]'::jsonb, 'active',
       pg_temp.t0() - interval '790 days', pg_temp.t0(), ''
FROM bench_org o CROSS JOIN generate_series(1, %(locations)s) AS l(i)
"""

REVIEWS_SQL = """
INSERT INTO reputation_review (id, organization_id, created_at, updated_at, source_id, location_id, provider_review_id,
    reviewer_name, rating, comment, review_created_at, review_updated_at, version, reply_comment, reply_updated_at,
    reply_status, reply_error, reply_attempts)
SELECT pg_temp.bench_uuid('rpt-rev', o.idx, v), o.org_id, x.at, x.at, pg_temp.bench_uuid('rpt-src', o.idx, x.l),
       pg_temp.bench_uuid('loc', o.idx, x.l), 'review-' || v, 'Recensore ' || v, x.rating,
       CASE WHEN pg_temp.r(k, 243, 100) < 70 THEN 'Studio molto professionale' ELSE '' END, x.at, x.at, 'v1',
       CASE WHEN x.replied THEN 'Grazie per la recensione!' ELSE '' END,
       CASE WHEN x.replied THEN x.at + interval '1 day' END,
       CASE WHEN x.replied THEN 'published' ELSE 'none' END, '', CASE WHEN x.replied THEN 1 ELSE 0 END
FROM bench_org o CROSS JOIN LATERAL generate_series(1, round(o.patients * %(reviews)s)::int) AS v
CROSS JOIN LATERAL (SELECT o.idx::bigint * 10000000000 + v AS k) kk
CROSS JOIN LATERAL (
    SELECT 1 + pg_temp.r(k, 240, %(locations)s) AS l,
           pg_temp.t0() - pg_temp.r(k, 241, 1051200) * interval '1 minute' AS at,
           (ARRAY[5, 5, 5, 5, 5, 5, 4, 4, 3, 2, 1, 1])[1 + pg_temp.r(k, 242, 12)] AS rating,
           pg_temp.r(k, 244, 100) < 60 AS replied
) x
"""

MARKER_TABLE = """
CREATE TABLE IF NOT EXISTS bench_reports_seed (
    organization_id text, owner_id text, seed_time timestamptz, counts jsonb, seed_seconds float8, version int
)
"""

PARAMS = {"campaigns": 104, "span": 22_000, "deposits": 0.06, "reviews": 0.015}


def database_url() -> str:
    return env.database_url("BENCH_REPORTS_DATABASE_URL", DEFAULT_URL)


def prepare_patients(url: str, *, reseed: bool, log) -> seed.SeedInfo:
    """The patients benchmark's seed (PATIENTS in the measured practice, OTHERS x OTHER_PATIENTS), reused when the
    database already holds it."""
    wanted = seed.SeedInfo(PATIENTS, OTHERS, OTHER_PATIENTS, organization_id="", api_key="")
    if not reseed and env.exists(url) and seed.is_seeded(url, wanted):
        log(f"database {env.database_name(url)} already holds the patients seed: reusing it (--reseed rebuilds it)")
        env.migrate(url)
        return seed.SeedInfo.load(url)
    log(f"building database {env.database_name(url)}")
    log(f"migrated in {env.rebuild(url):.1f}s")
    log(f"seeding {PATIENTS:,} patients in the measured practice and {OTHERS} practice(s) of {OTHER_PATIENTS:,}")
    with user_defaults(url):
        return seed.seed(url, patients=PATIENTS, others=OTHERS, other_patients=OTHER_PATIENTS, log=log)


@contextlib.contextmanager
def user_defaults(url: str):
    """accounts_user columns NOT NULL in the database with a Python-side default only (phone_mobile, since
    accounts 0007) get that default in the database while the seeds' INSERTs (bench.patients.seed's other practices'
    owners, bench.crm.seed's team), which do not name them, run; dropped again afterwards."""
    with env.connect(url) as conn:
        columns = [
            name
            for (name,) in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'accounts_user' "
                "AND is_nullable = 'NO' AND column_default IS NULL AND data_type IN ('character varying', 'text') "
                "AND column_name NOT IN ('password', 'email', 'name')"
            ).fetchall()
        ]
        for name in columns:
            conn.execute(
                sql.SQL("ALTER TABLE accounts_user ALTER COLUMN {} SET DEFAULT ''").format(sql.Identifier(name))
            )
    try:
        yield
    finally:
        with env.connect(url) as conn:
            for name in columns:
                conn.execute(
                    sql.SQL("ALTER TABLE accounts_user ALTER COLUMN {} DROP DEFAULT").format(sql.Identifier(name))
                )


def _measured_counts(conn, organization_id: str) -> dict[str, int]:
    return {
        kind: conn.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE organization_id = %s").format(sql.Identifier(table)),
            [organization_id],
        ).fetchone()[0]
        for kind, table in COUNTED.items()
    }


def _marker(conn) -> dict | None:
    if conn.execute("SELECT to_regclass('bench_reports_seed')").fetchone()[0] is None:
        return None
    row = conn.execute(
        "SELECT organization_id, owner_id, seed_time, counts, seed_seconds, version FROM bench_reports_seed"
    ).fetchone()
    if row is None:
        return None
    return dict(
        zip(("organization_id", "owner_id", "seed_time", "counts", "seed_seconds", "version"), row, strict=True)
    )


def prepare_reports(url: str, info: seed.SeedInfo, *, reseed: bool, log) -> dict:
    """The reports' rows (Django must be set up on `url`): reused when fresh and complete, else rebuilt."""
    with env.connect(url) as conn:
        found = _marker(conn)
        if (
            found
            and not reseed
            and (found["version"], found["organization_id"])
            == (
                REPORTS_SEED_VERSION,
                info.organization_id,
            )
        ):
            age = datetime.datetime.now(datetime.UTC) - found["seed_time"]
            complete = _measured_counts(conn, info.organization_id) == found["counts"]
            if complete and age < STALE_AFTER:
                log(f"report rows seeded {age.total_seconds() / 3600:.1f} h ago: reusing them")
                return found
            log("report rows incomplete" if not complete else f"report rows older than {STALE_AFTER}: rebuilding")
    return seed_reports(url, info, log=log)


def _practitioners() -> tuple[list[str], list[str]]:
    names = [name for name, _ in crm.PRACTITIONERS]
    kinds = [kind for _, kind in crm.PRACTITIONERS]
    for i in range(len(names), PRACTITIONERS):
        names.append(f"Dott. Bench {i + 1}")
        kinds.append("hygienist" if i % 4 == 3 else "dentist")
    return names, kinds


def seed_reports(url: str, info: seed.SeedInfo, *, log) -> dict:
    started = time.monotonic()
    with env.connect(url) as conn:
        owner_id = str(
            conn.execute(
                "SELECT user_id FROM accounts_membership WHERE organization_id = %s AND role = 'owner'",
                [info.organization_id],
            ).fetchone()[0]
        )
    orgs = [(0, info.organization_id, owner_id, info.patients, "")] + [
        (i, seed.det_uuid("org", i, 0), seed.det_uuid("user", i, 0), info.other_patients, "")
        for i in range(1, info.others + 1)
    ]
    seed_time = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    with user_defaults(url):
        return _seed_reports(url, info, orgs, owner_id, seed_time, started, log)


def _seed_reports(url, info, orgs, owner_id, seed_time, started, log) -> dict:
    from bench.patients import data

    workers = 2
    sessions = [seed._session(url, orgs=orgs, seed_time=seed_time) for _ in range(workers)]
    names, kinds = _practitioners()
    params = {
        **crm._params(),
        **PER_PATIENT,
        **PARAMS,
        "practitioner_names": names,
        "practitioner_kinds": kinds,
        "practitioners": PRACTITIONERS,
        "locations": len(data.LOCATIONS),
    }
    try:
        conn = sessions[0]
        t0 = time.monotonic()
        conn.execute(seed._with_constants(RESET_SQL))
        crm._catalogue([str(org[1]) for org in orgs])
        with conn.transaction():
            for statement in crm.TEAM_SQL:
                conn.execute(statement, params)
            conn.execute(CONNECTIONS_SQL)
            conn.execute(seed._with_constants(REVIEW_SOURCES_SQL), params)
            conn.execute(seed._with_constants(CAMPAIGNS_SQL), params)
        for session in sessions:
            session.execute(crm.CRM_ORG_SQL, params)
        log(f"reset; team, catalogue, connections, review sources and campaigns in {time.monotonic() - t0:.1f}s")

        def one(label, statement, conn, **extra):
            t = time.monotonic()
            if statement not in (crm.JOURNEYS_SQL, crm.APPOINTMENTS_SQL):
                statement = seed._with_constants(statement)
            count = conn.execute(statement, {**params, **extra}).rowcount
            log(f"inserted {count:,} {label} in {time.monotonic() - t:.1f}s")
            return count

        # Two independent streams on the two connections, then the per-patient statements split by n mod 2.
        seed._parallel(
            sessions,
            [
                lambda c: [one("journeys", crm.JOURNEYS_SQL, c), one("deposits", DEPOSITS_SQL, c)],
                lambda c: [one("appointments", crm.APPOINTMENTS_SQL, c), one("reviews", REVIEWS_SQL, c)],
            ],
        )
        for label, statement in (
            ("first-contact activities", FIRST_CONTACT_SQL),
            ("conversations", CONVERSATIONS_SQL),
            ("conversation messages", MESSAGES_SQL),
        ):
            t = time.monotonic()
            text = seed._with_constants(statement)
            counts = seed._parallel(
                sessions,
                [
                    lambda c, w=w, s=text: c.execute(s, {**params, "worker": w, "workers": workers}).rowcount
                    for w in range(workers)
                ],
            )
            log(f"inserted {sum(counts):,} {label} in {time.monotonic() - t:.1f}s")
        seed._parallel(
            sessions,
            [
                lambda c: one("campaign messages and replies", CAMPAIGN_MESSAGES_SQL, c),
                lambda c: one("campaign recipients", RECIPIENTS_SQL, c),
            ],
        )
    finally:
        for session in sessions:
            session.close()
    t0 = time.monotonic()
    with env.connect(url) as conn:
        conn.execute("VACUUM (ANALYZE) " + ", ".join(TABLES) + ", accounts_membership, patients_practitioner")
        counts = _measured_counts(conn, info.organization_id)
    log(f"VACUUM ANALYZE in {time.monotonic() - t0:.1f}s")
    found = {
        "organization_id": info.organization_id,
        "owner_id": owner_id,
        "seed_time": seed_time,
        "counts": counts,
        "seed_seconds": round(time.monotonic() - started, 1),
        "version": REPORTS_SEED_VERSION,
    }
    with env.connect(url) as conn, conn.transaction():
        conn.execute(MARKER_TABLE)
        conn.execute("DELETE FROM bench_reports_seed")
        conn.execute(
            "INSERT INTO bench_reports_seed VALUES (%s, %s, %s, %s, %s, %s)",
            [info.organization_id, owner_id, seed_time, Jsonb(counts), found["seed_seconds"], REPORTS_SEED_VERSION],
        )
    log(f"seeded the report rows in {found['seed_seconds']:.1f}s: {counts}")
    return found
