"""A campaign's audience, evaluated once at launch and frozen as CampaignRecipient rows by one INSERT … SELECT.

The audience is the patients list's own filtering (apps.patients.public: PatientFilters from a saved view or given
inline, archived and merged records left out) compiled to SQL by Django and used as a subquery; nothing is read into
Python per patient (100,000 patients freeze in about a second: docs/benchmarks.md). Each patient's row records the
address the channel would use and, when the message cannot be sent, why — in the order the sending pipeline checks
(apps.conversations.public.queue_messages):

- PATIENT_INACTIVE: the patient is recorded as deceased;
- NO_ADDRESS: no e-mail address (e-mail), no mobile number (the other channels), or a national number when neither
  the connection's number nor the practice's country says which country it is in;
- CONTACT_BLOCKED / ADDRESS_SUPPRESSED: the contact asked to stop (STOP) / the e-mail address bounced or complained;
- OPTED_OUT: the patient's opt-out flag for the channel;
- NO_CONSENT: the latest marketing-consent record for the channel is not a grant (no record is no consent).

The number is written in E.164 in SQL as the pipeline's phonenumbers parsing writes it for the usual spellings
(+…, 00…, a national number with or without the country's trunk prefix); the pipeline reads the patient again at
release and before each provider call, so a block or withdrawal after launch still wins (the recipient ends skipped,
or its message failed, with the reason).
"""

import phonenumbers
from django.db import connection as db

from apps.campaigns.models import CampaignRecipient, Channel
from apps.conversations.public import BLOCK_CHANNEL, CONSENT_CHANNEL, ChannelConnection, ContactBlock, practice_region
from apps.patients.public import (
    MarketingConsent,
    Patient,
    PatientFiltersSerializer,
    PatientQuery,
    Status,
    patient_filtered,
)

OPT_OUT_COLUMN = {"sms": "sms_opt_out", "whatsapp": "whatsapp_opt_out", "email": "email_opt_out"}


class AudienceInvalid(ValueError):
    """Stored filters that no longer validate (a saved view edited outside the API): the problems, by field."""

    def __init__(self, errors):
        super().__init__(str(errors))
        self.errors = errors


def audience_queryset(*, organization, filters: dict):
    """The patients the filters select, as the patients list selects them (archived and merged left out)."""
    parsed = PatientFiltersSerializer(data=filters or {})
    if not parsed.is_valid():
        raise AudienceInvalid(parsed.errors)
    return patient_filtered(organization=organization, query=PatientQuery(filters=dict(parsed.validated_data)))


def _address_sql(channel: str, region: str | None) -> tuple[str, list]:
    """SQL (and parameters) for the patient's address on the channel, from the columns of `d` (email; raw, digits)."""
    if channel == Channel.EMAIL:
        return "lower(btrim(d.email))", []
    national, params = "''", []
    code = phonenumbers.country_code_for_region(region) if region else 0
    if code:
        metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
        trunk = (metadata.national_prefix if metadata else None) or ""
        if trunk.isdigit():
            national = "'+' || %s || regexp_replace(d.digits, %s, '')"
            params = [str(code), f"^{trunk}"]
        else:
            national = "'+' || %s || d.digits"
            params = [str(code)]
    sql = (
        "CASE WHEN d.digits = '' THEN '' "
        "WHEN d.raw LIKE '+%%' THEN '+' || d.digits "
        "WHEN d.digits LIKE '00%%' THEN '+' || substr(d.digits, 3) "
        f"ELSE {national} END"
    )
    return sql, params


def freeze(*, campaign, organization, connection: ChannelConnection, filters: dict, now) -> dict[str, int]:
    """Insert the campaign's recipients (pending, or skipped with the reason) in one statement; returns how many of
    each: {"pending": n, "<skip reason>": n, …}, counted from the inserted rows by the same statement."""
    sql, params = freeze_statement(
        campaign=campaign, organization=organization, connection=connection, filters=filters, now=now
    )
    counted = f"WITH inserted AS ({sql} RETURNING state, skip_reason) "
    counted += "SELECT coalesce(nullif(skip_reason, ''), state), count(*) FROM inserted GROUP BY 1"
    with db.cursor() as cursor:
        cursor.execute(counted, params)
        return dict(cursor.fetchall())


def freeze_statement(*, campaign, organization, connection: ChannelConnection, filters: dict, now):
    """The INSERT … SELECT that freezes the audience, and its parameters (the benchmark runs it with psql too)."""
    audience = audience_queryset(organization=organization, filters=filters).values("id")
    audience_sql, audience_params = audience.query.sql_with_params()
    kind = connection.kind
    consent_channel = CONSENT_CHANNEL[kind]
    address_sql, address_params = _address_sql(kind, practice_region(connection, organization))
    flag = OPT_OUT_COLUMN[consent_channel]
    digits_sql = "''" if kind == Channel.EMAIL else "regexp_replace(coalesce(p.phone_mobile, ''), '[^0-9]', '', 'g')"
    # Each level is fenced (OFFSET 0) so that the address is computed once per patient, not once per reference.
    sql = f"""
        INSERT INTO {CampaignRecipient._meta.db_table}
            (id, organization_id, campaign_id, patient_id, address, state, skip_reason, created_at, updated_at)
        SELECT gen_random_uuid(), %s, %s, r.id, r.address,
               CASE WHEN r.reason IS NULL THEN 'pending' ELSE 'skipped' END, coalesce(r.reason, ''), %s, %s
        FROM (
            SELECT a.id, a.address,
                   CASE
                       WHEN a.deceased THEN 'PATIENT_INACTIVE'
                       WHEN a.address = '' THEN 'NO_ADDRESS'
                       WHEN b.reason LIKE 'email\\_%%' THEN 'ADDRESS_SUPPRESSED'
                       WHEN b.reason IS NOT NULL THEN 'CONTACT_BLOCKED'
                       WHEN a.opted_out THEN 'OPTED_OUT'
                       WHEN c.status IS DISTINCT FROM %s THEN 'NO_CONSENT'
                   END AS reason
            FROM (
                SELECT d.id, d.deceased, d.opted_out, {address_sql} AS address
                FROM (
                    SELECT p.id, p.status = %s AS deceased, p.{flag} AS opted_out,
                           coalesce(p.email, '') AS email, btrim(coalesce(p.phone_mobile, '')) AS raw,
                           {digits_sql} AS digits
                    FROM {Patient._meta.db_table} p
                    WHERE p.organization_id = %s AND p.id IN ({audience_sql})
                    OFFSET 0
                ) d
                OFFSET 0
            ) a
            LEFT JOIN LATERAL (
                SELECT mc.status FROM {MarketingConsent._meta.db_table} mc
                WHERE mc.organization_id = %s AND mc.patient_id = a.id AND mc.channel = %s
                ORDER BY mc.recorded_at DESC LIMIT 1
            ) c ON true
            LEFT JOIN {ContactBlock._meta.db_table} b
                ON b.organization_id = %s AND b.channel = %s AND b.address = a.address AND b.blocked
        ) r
    """  # noqa: S608 - table and column names are the models' own; every value is a bound parameter
    params = [
        organization.pk,
        campaign.pk,
        now,
        now,
        MarketingConsent.State.GRANTED,
        *address_params,
        Status.DECEASED,
        organization.pk,
        *audience_params,
        organization.pk,
        consent_channel,
        organization.pk,
        BLOCK_CHANNEL[kind],
    ]  # in the order of their placeholders in the text
    return sql, params
