"""Fixtures of the reports tests: a small practice whose every figure is computed by hand (see each test), an
outsider practice with data of its own that must never be counted, members of each role, the clock held at
2025-03-31 12:00 UTC, and the real SMTP server of the account tests."""

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from apps.appointments.models import Appointment
from apps.campaigns.models import Campaign, CampaignRecipient
from apps.conversations.models import ChannelConnection, Conversation, Message
from apps.deposits.models import DepositRequest
from apps.journeys.models import Journey, Pipeline, Stage, Treatment
from apps.patients.models import Activity, Patient
from apps.reputation.models import Review, ReviewSource
from tests.accounts.conftest import smtp  # noqa: F401 (the fixture, used by the subscription tests)
from tests.conftest import make_member
from tests.factories import LeadSourceFactory, LocationFactory, PatientFactory, PractitionerFactory

NOW = datetime(2025, 3, 31, 12, 0, tzinfo=UTC)
MARCH = "from=2025-03-01&to=2025-03-31"


def at(month: int, day: int, hour: int = 10, minute: int = 0) -> datetime:
    return datetime(2025, month, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(NOW, tick=False)
    return time_machine


@dataclass
class World:
    organization: object
    ids: dict = field(default_factory=dict)


def _patient(org, created, **fields) -> Patient:
    patient = PatientFactory(organization=org, **fields)
    Patient.objects.for_org(org).filter(id=patient.id).update(created_at=created)
    return patient


def _activity(org, patient, kind, when, *, actor=None, data=None) -> None:
    row = Activity.objects.create(organization=org, patient=patient, kind=kind, actor=actor, data=data or {})
    Activity.objects.for_org(org).filter(id=row.id).update(created_at=when)


def _connection(org, kind) -> ChannelConnection:
    return ChannelConnection.objects.create(
        organization=org,
        kind=kind,
        name=kind,
        address=f"{kind}-{uuid.uuid4().hex[:8]}",
        routing_token=uuid.uuid4().hex,
        credentials_encrypted="x",
        status="active",
    )


def build_practice(member, *, analyst_user=None) -> World:
    """The hand-computed practice (every count is asserted in the tests)."""
    org = member.organization
    world = World(organization=org)
    google, referral = (
        LeadSourceFactory(organization=org, name="Google"),
        LeadSourceFactory(organization=org, name="Referral"),
    )
    location = LocationFactory(organization=org)
    world.ids.update(google=google.id, referral=referral.id, location=location.id)

    # --- patients: 7 counted in March (p9 merged, p8 in February) ---
    p1 = _patient(org, at(3, 2), lead_source=google, status="enquiry")
    p2 = _patient(org, at(3, 3), lead_source=google, status="lead")
    p3 = _patient(org, at(3, 4), lead_source=google, status="patient", location=location)
    p4 = _patient(org, at(3, 5), lead_source=google, status="archived", status_before_archive="patient")
    p5 = _patient(org, at(3, 10), lead_source=referral, status="patient")
    p6 = _patient(org, at(3, 11), lead_source=referral, status="inactive")
    p7 = _patient(org, at(3, 12), status="lead")
    p8 = _patient(org, at(2, 20), lead_source=google, status="patient")
    _patient(org, at(3, 6), lead_source=google, status="lead", merged_into=p3)
    world.ids.update(p1=p1.id, p2=p2.id, p3=p3.id)

    # --- speed to lead: p1 called by the owner after 4 min, p2 messaged by the system after 30 min (an inbound
    # message after 1 min is not a contact), p3 called after 2 h by the analyst ---
    _activity(org, p1, "call", at(3, 2, 10, 4), actor=member.user, data={"channel": "phone", "outcome": "no_answer"})
    _activity(org, p2, "message", at(3, 3, 10, 1), data={"direction": "inbound", "channel": "sms"})
    _activity(org, p2, "message", at(3, 3, 10, 30), data={"direction": "outbound", "channel": "sms"})
    _activity(org, p3, "note", at(3, 4, 10, 1), actor=member.user)
    _activity(org, p3, "call", at(3, 4, 12, 0), actor=analyst_user, data={"direction": "outbound"})
    _activity(org, p3, "call", at(3, 4, 13, 0), actor=member.user, data={"direction": "outbound"})

    # --- journeys ---
    pipeline = Pipeline.objects.create(organization=org, name="Sales", is_default=True)
    new = Stage.objects.create(organization=org, pipeline=pipeline, name="New", kind="open", position=1)
    consult = Stage.objects.create(organization=org, pipeline=pipeline, name="Consult", kind="open", position=2)
    won = Stage.objects.create(organization=org, pipeline=pipeline, name="Won", kind="won", position=3)
    lost = Stage.objects.create(organization=org, pipeline=pipeline, name="Lost", kind="lost", position=4)
    other = Pipeline.objects.create(organization=org, name="Implants")
    other_stage = Stage.objects.create(organization=org, pipeline=other, name="Enquiry", kind="open", position=1)
    treatment = Treatment.objects.create(organization=org, name="Aligners")
    world.ids.update(pipeline=pipeline.id, other_pipeline=other.id, new=new.id, consult=consult.id)

    def journey(patient, stage, status="open", value="0", entered=NOW, **dates):
        return Journey.objects.create(
            organization=org,
            patient=patient,
            treatment=treatment,
            pipeline=stage.pipeline,
            stage=stage,
            status=status,
            estimated_value=Decimal(value),
            currency="EUR",
            stage_entered_at=entered,
            **dates,
        )

    journey(p1, new, value="100.00", entered=NOW - timedelta(hours=2), assignee=member.user)
    journey(p2, new, value="50.50", entered=NOW - timedelta(hours=4))
    journey(p7, consult, value="0", entered=NOW - timedelta(days=1))
    journey(p3, won, "won", "1000.00", won_at=at(3, 10))
    journey(p5, won, "won", "200.00", won_at=at(3, 15))
    journey(p8, won, "won", "999.00", won_at=at(2, 21))
    journey(p6, lost, "lost", "300.00", lost_at=at(3, 20))
    journey(p4, other_stage, value="700.00")

    # --- appointments: 5 in March ---
    dr_x = PractitionerFactory(organization=org, name="Dr X")
    dr_y = PractitionerFactory(organization=org, name="Dr Y")
    world.ids.update(dr_x=dr_x.id, dr_y=dr_y.id)

    def appointment(practitioner, start, status, kind):
        Appointment.objects.create(
            organization=org,
            patient=p1,
            practitioner=practitioner,
            starts_at=start,
            ends_at=start + timedelta(minutes=30),
            status=status,
            appointment_type=kind,
        )

    appointment(dr_x, at(3, 3, 9), "completed", "consultation")
    appointment(dr_x, at(3, 4, 9), "no_show", "consultation")
    appointment(dr_y, at(3, 5, 9), "cancelled", "treatment")
    appointment(dr_y, at(3, 25, 9), "booked", "hygiene")
    appointment(dr_x, at(3, 11, 9), "arrived", "consultation")
    appointment(dr_x, at(2, 25, 9), "completed", "consultation")

    # --- campaigns and messages ---
    sms = _connection(org, "sms")
    world.ids["sms"] = sms.id

    def message(conversation, direction, status, when):
        return Message.objects.create(
            organization=org,
            conversation=conversation,
            direction=direction,
            channel="sms",
            status=status,
            occurred_at=when,
        )

    campaign = Campaign.objects.create(organization=org, name="Spring", status="completed", connection=sms)
    Campaign.objects.for_org(org).filter(id=campaign.id).update(launched_at=at(3, 5))
    old = Campaign.objects.create(organization=org, name="Winter", status="completed", connection=sms)
    Campaign.objects.for_org(org).filter(id=old.id).update(launched_at=at(2, 1))
    world.ids["campaign"] = campaign.id
    outcomes = [(p1, "delivered", None), (p2, "read", None), (p4, "failed", at(3, 6))]
    for patient, status, unsubscribed in outcomes:
        conversation = Conversation.objects.create(
            organization=org, patient=patient, connection=sms, channel="sms", contact_address="+1", last_message_at=NOW
        )
        sent = message(conversation, "outbound", status, at(3, 5))
        CampaignRecipient.objects.create(
            organization=org,
            campaign=campaign,
            patient=patient,
            state="released",
            message=sent,
            released_at=at(3, 5),
            unsubscribed_at=unsubscribed,
        )
        if status == "read":
            message(conversation, "inbound", "received", at(3, 6))
    CampaignRecipient.objects.create(
        organization=org, campaign=campaign, patient=p3, state="skipped", skip_reason="NO_CONSENT"
    )
    CampaignRecipient.objects.create(organization=org, campaign=old, patient=p3, state="skipped")

    # --- deposits ---
    def deposit(amount, status, created, **fields):
        row = DepositRequest.objects.create(
            organization=org, patient=p1, amount=amount, currency="EUR", reason="x", status=status, **fields
        )
        DepositRequest.objects.for_org(org).filter(id=row.id).update(created_at=created)

    deposit(5000, "paid", at(3, 2), sent_at=at(3, 2), paid_at=at(3, 3))
    deposit(2000, "expired", at(3, 3), sent_at=at(3, 3), expired_at=at(3, 10))
    deposit(3000, "refunded", at(3, 4), sent_at=at(3, 4), paid_at=at(3, 4), refunded_amount=3000)
    deposit(1000, "draft", at(3, 5))
    deposit(4000, "sent", at(3, 6), sent_at=at(3, 6))
    deposit(9000, "paid", at(2, 6), sent_at=at(2, 6), paid_at=at(2, 7))

    # --- reviews ---
    source = ReviewSource.objects.create(
        organization=org,
        location=location,
        name="GBP",
        account_ref="accounts/1",
        location_ref="locations/1",
        review_url="https://example.com/review",
        credentials_encrypted="x",
    )
    for index, (rating, when, reply) in enumerate(
        [(5, at(3, 2), "Thanks!"), (5, at(3, 3), ""), (4, at(3, 9), ""), (1, at(3, 20), ""), (2, at(2, 2), "")]
    ):
        Review.objects.create(
            organization=org,
            source=source,
            location=location,
            provider_review_id=f"r{index}",
            rating=rating,
            review_created_at=when,
            review_updated_at=when,
            version=str(index),
            reply_comment=reply,
        )
    return world


def build_outsider(member) -> None:
    """Another practice's records, all in March: none may reach the first practice's figures."""
    org = member.organization
    source = LeadSourceFactory(organization=org, name="Google")
    patient = _patient(org, at(3, 2), lead_source=source, status="patient")
    _activity(org, patient, "call", at(3, 2, 10, 1), actor=member.user)
    practitioner = PractitionerFactory(organization=org)
    Appointment.objects.create(
        organization=org,
        patient=patient,
        practitioner=practitioner,
        starts_at=at(3, 3, 9),
        ends_at=at(3, 3, 10),
        status="no_show",
    )
    DepositRequest.objects.create(
        organization=org, patient=patient, amount=7000, currency="EUR", reason="x", status="sent", sent_at=at(3, 2)
    )


@pytest.fixture
def analyst(owner):
    return make_member(role="analyst", organization=owner.organization)


@pytest.fixture
def world(clock, owner, analyst, outsider) -> World:
    built = build_practice(owner, analyst_user=analyst.user)
    build_outsider(outsider)
    return built
