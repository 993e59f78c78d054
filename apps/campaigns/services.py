"""Writes of templates and campaigns, each in one transaction. The event catalogue has no template or campaign
events, so none are emitted here; the messages a campaign or a template send queues emit the pipeline's own
(conversation.created, message.sent, message.status_changed), and an opt-out the patients area's patient.updated."""

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Organization
from apps.campaigns import audience, rendering, tokens, variables
from apps.campaigns.errors import (
    CampaignNotEditable,
    CampaignNotReady,
    CampaignTransitionNotAllowed,
    MessageNotQueued,
    TemplateCategoryLocked,
    TemplateInUse,
    TemplateNotApproved,
    TemplateVariableMissing,
    TestSendAddressMissing,
    TestSendAddressUnverified,
    TestSendContactBlocked,
)
from apps.campaigns.models import (
    Approval,
    Campaign,
    CampaignRecipient,
    CampaignStatus,
    Category,
    Channel,
    MessageTemplate,
    RecipientState,
)
from apps.conversations.public import (
    ADDRESS_SUPPRESSED,
    BLOCK_CHANNEL,
    CONSENT_CHANNEL,
    CONTACT_BLOCKED,
    MAX_HTML,
    ContactBlock,
    Message,
    OutboundMessage,
    queue_messages,
    send_test_message,
    withdraw_queued,
)
from apps.conversations.public import BODY_LIMITS as RENDERED_BODY_LIMITS
from apps.core.errors import NotFound, ValidationFailed
from apps.core.writes import assign_fields
from apps.patients.public import MarketingConsent, Patient, PatientMerged, consent_record

logger = logging.getLogger("apps.campaigns")

# What a template's body may hold before rendering: the sending pipeline's own limits per channel (what a rendered
# message is checked against too), except the messaging app. There a template stands for a provider template, and
# WhatsApp limits a template's body text to 1,024 characters (the 4,096 of the pipeline is for free-form text
# messages), so a longer one could never be approved.
PROVIDER_TEMPLATE_BODY_LIMIT = 1024
BODY_LIMITS = {**RENDERED_BODY_LIMITS, Channel.MESSAGING_APP: PROVIDER_TEMPLATE_BODY_LIMIT}
MAX_SUBJECT = 998
SENDING_CONNECTION_STATUSES = ("pending", "active", "failing")  # a disconnected connection sends nothing


def _problem(field: str, problem: str, **details) -> ValidationFailed:
    return ValidationFailed(f"{field}: {problem}", details={"fields": {field: [problem]}, **details})


# --- templates ----------------------------------------------------------------------------------------------------

TEMPLATE_FIELDS = ("name", "category", "subject", "body", "html", "provider_template_name", "language")
# A messaging-app template changed in one of these needs the provider's approval again.
REVIEWED_FIELDS = ("category", "body", "provider_template_name", "language")


def _check_template(template: MessageTemplate) -> None:
    """Channel rules and the variables of every text, on the template as it would be saved."""
    channel, marketing = template.channel, template.category == Category.MARKETING
    if not template.body.strip():
        raise _problem("body", "must contain something other than spaces")
    if len(template.body) > BODY_LIMITS[channel]:
        raise _problem("body", f"is longer than {BODY_LIMITS[channel]} characters for {channel}")
    if channel == Channel.EMAIL:
        if not template.subject.strip():
            raise _problem("subject", "is required for e-mail")
    else:
        for field in ("subject", "html"):
            if getattr(template, field):
                raise _problem(field, "is for e-mail templates only")
    if channel == Channel.MESSAGING_APP:
        if not template.provider_template_name:
            raise _problem("providerTemplateName", "is required for messaging-app templates")
        if not template.language:
            raise _problem("language", "is required for messaging-app templates")
    else:
        for field, wire in (("provider_template_name", "providerTemplateName"), ("language", "language")):
            if getattr(template, field):
                raise _problem(wire, "is for messaging-app templates only")
    for field in ("subject", "body", "html"):
        try:
            variables.parse(getattr(template, field), marketing=marketing)
        except variables.TemplateSyntaxProblem as problem:
            raise _problem(field, problem.problem, variable=problem.variable) from None
    if (
        channel == Channel.MESSAGING_APP
        and marketing
        and variables.UNSUBSCRIBE not in variables.names_of(template.body)
    ):
        raise _problem(
            "body",
            "a marketing messaging-app template must place {{unsubscribe.link}} (the provider's approved text "
            "cannot be added to)",
            variable=variables.UNSUBSCRIBE,
        )
    template.variables = variables.names_of(template.subject, template.body, template.html, marketing=marketing)


@transaction.atomic
def template_create(*, organization, user, data: dict) -> MessageTemplate:
    template = MessageTemplate(organization=organization, channel=data["channel"], created_by=user)
    assign_fields(template, data, fields=TEMPLATE_FIELDS)
    _check_template(template)
    if template.channel == Channel.MESSAGING_APP:
        template.approval_status = Approval.PENDING
        template.approval_changed_at = timezone.now()
    template.save(force_insert=True)
    return template


def _locked_template(organization, template_id) -> MessageTemplate:
    template = MessageTemplate.objects.for_org(organization).select_for_update().filter(id=template_id).first()
    if template is None:
        raise NotFound("No such message template.")
    return template


@transaction.atomic
def template_update(*, organization, user, template_id, data: dict) -> MessageTemplate:
    """Any subset of the fields (the channel stays). A messaging-app template whose category, text, provider
    template name or language changes goes back to pending: the provider reviews the new one."""
    template = _locked_template(organization, template_id)
    before = {field: getattr(template, field) for field in REVIEWED_FIELDS}
    changed = assign_fields(template, data, fields=TEMPLATE_FIELDS)
    if not changed:
        return template
    if template.category != before["category"]:
        _check_category_free(organization, template)
    _check_template(template)
    reviewed = any(getattr(template, field) != before[field] for field in REVIEWED_FIELDS)
    if template.channel == Channel.MESSAGING_APP and reviewed and template.approval_status != Approval.PENDING:
        template.approval_status, template.approval_reason = Approval.PENDING, ""
        template.approval_changed_at, template.approval_changed_by = timezone.now(), user
    template.save()
    return template


# Campaigns in these states still send (or will send) their template as a marketing message.
LIVE_STATUSES = (CampaignStatus.DRAFT, CampaignStatus.SCHEDULED, CampaignStatus.SENDING, CampaignStatus.PAUSED)


def _check_category_free(organization, template: MessageTemplate) -> None:
    """A template a live campaign uses keeps its category (409 TEMPLATE_CATEGORY_LOCKED): campaigns send marketing
    messages, with the opt-out link and the channel's consent."""
    using = list(
        Campaign.objects.for_org(organization)
        .filter(template=template, status__in=LIVE_STATUSES)
        .order_by("created_at", "id")
        .values_list("id", flat=True)[:20]
    )
    if using:
        raise TemplateCategoryLocked(using)


@transaction.atomic
def template_delete(*, organization, template_id) -> None:
    """Refused (409 TEMPLATE_IN_USE) while a draft campaign uses it; launched campaigns keep their own copy."""
    template = _locked_template(organization, template_id)
    drafts = list(
        Campaign.objects.for_org(organization)
        .filter(template=template, status=CampaignStatus.DRAFT)
        .values_list("id", flat=True)[:20]
    )
    if drafts:
        raise TemplateInUse(drafts)
    template.delete()


@transaction.atomic
def template_set_approval(*, organization, user, template_id, status: str, reason: str) -> MessageTemplate:
    """Record the provider's review of a messaging-app template (approved, rejected, or back to pending)."""
    template = _locked_template(organization, template_id)
    if template.channel != Channel.MESSAGING_APP:
        raise _problem("status", "only messaging-app templates carry an approval status")
    if status != Approval.REJECTED and reason:
        raise _problem("reason", "is only kept for a rejection")
    template.approval_status, template.approval_reason = status, reason
    template.approval_changed_at, template.approval_changed_by = timezone.now(), user
    template.save()
    return template


def template_status_from_provider(*, organization_id, name: str, language: str, status: str, reason: str) -> int:
    """The messaging platform's review decision (apps.conversations.public.on_template_status): the practice's
    messaging-app templates of that provider name and language take it, recorded as the platform's (no member).
    Returns how many changed."""
    return (
        MessageTemplate.objects.for_org(organization_id)
        .filter(channel=Channel.MESSAGING_APP, provider_template_name=name, language=language)
        .exclude(approval_status=status, approval_reason=reason)
        .update(
            approval_status=status,
            approval_reason=reason if status == Approval.REJECTED else "",
            approval_changed_at=timezone.now(),
            approval_changed_by=None,
            updated_at=timezone.now(),
        )
    )


def check_sendable(template: MessageTemplate) -> None:
    if template.channel == Channel.MESSAGING_APP and template.approval_status != Approval.APPROVED:
        raise TemplateNotApproved(template.approval_status)


def check_campaign_template(template: MessageTemplate) -> None:
    """What a campaign's template must be when it is launched or test-sent (checked again then, whatever it was when
    the campaign was saved): a marketing template, approved when it is a messaging-app one."""
    if template.category != Category.MARKETING:
        raise CampaignNotReady(
            "the template is no longer a marketing template: campaigns send marketing messages", field="templateId"
        )
    check_sendable(template)


def check_rendered(channel: str, rendered: rendering.Rendered) -> str | None:
    """Why the pipeline would refuse this rendered message (None when it would take it)."""
    if not rendered.body.strip() and not rendered.template:
        return "MESSAGE_EMPTY"
    if len(rendered.body) > RENDERED_BODY_LIMITS[channel]:  # the pipeline's own limits
        return "MESSAGE_TOO_LONG"
    if channel == Channel.EMAIL and (
        not rendered.subject.strip() or len(rendered.subject) > MAX_SUBJECT or len(rendered.html) > MAX_HTML
    ):
        return "MESSAGE_TOO_LONG" if rendered.subject.strip() else "MESSAGE_EMPTY"
    return None


@dataclass(frozen=True)
class Preview:
    subject: str
    body: str
    html: str
    template: dict | None
    missing_variables: list[str]


PREVIEW_UNSUBSCRIBE_URL = tokens.url("preview")  # not a token: opening it answers 404


def template_preview(*, organization, template: MessageTemplate, patient) -> Preview:
    """The template rendered for one patient, as it would be sent (the opt-out link is an inert example). Variables
    without a value for this patient are listed and rendered empty."""
    content = rendering.content_of(template)
    values = rendering.values_for(organization, [patient.id], names=template.variables).get(patient.id, {})
    missing = [name for name in template.variables if name != variables.UNSUBSCRIBE and values.get(name) is None]
    values = {**values, **dict.fromkeys(missing, "")}
    rendered = rendering.render(content, values, unsubscribe_url=PREVIEW_UNSUBSCRIBE_URL)
    return Preview(rendered.subject, rendered.body, rendered.html, rendered.template, missing)


@dataclass(frozen=True)
class SingleSend:
    message_id: object
    conversation_id: object
    purpose: str


def _render_for(organization, content: dict, patient_id, *, channel: str, campaign_id=None) -> rendering.Rendered:
    values = rendering.values_for(organization, [patient_id], names=content["variables"]).get(patient_id)
    if values is None:
        raise NotFound("No such patient.")
    url = ""
    if content["category"] == Category.MARKETING:
        url = rendering.opt_out_url(
            organization_id=organization.pk, patient_id=patient_id, channel=channel, campaign_id=campaign_id
        )
    try:
        return rendering.render(content, values, unsubscribe_url=url)
    except variables.MissingValue as missing:
        raise TemplateVariableMissing(missing.name) from None


@transaction.atomic
def template_send(*, organization, user, template: MessageTemplate, patient, connection) -> SingleSend:
    """One message from a template to one patient through the sending pipeline (purpose marketing for a marketing
    template, with its opt-out link; service otherwise; source "template")."""
    if patient.merged_into_id is not None:
        raise PatientMerged(patient.merged_into_id)
    if template.channel != connection.kind:
        raise _problem("connectionId", f"is a {connection.kind} connection; the template is for {template.channel}")
    check_sendable(template)
    content = rendering.content_of(template)
    rendered = _render_for(organization, content, patient.id, channel=template.channel)
    refused = check_rendered(template.channel, rendered)
    if refused:
        raise _problem("body", f"the rendered message cannot be sent ({refused})")
    purpose = "marketing" if template.category == Category.MARKETING else "service"
    (result,) = queue_messages(
        organization=organization,
        connection_id=connection.id,
        messages=[outbound_message(patient.id, rendered, reference="template")],
        purpose=purpose,
        source="template",
        user=user,
    )
    if result.message_id is None:
        raise MessageNotQueued(result.skipped_reason)
    conversation_id = (
        Message.objects.for_org(organization).filter(id=result.message_id).values_list("conversation_id", flat=True)
    ).first()
    return SingleSend(result.message_id, conversation_id, purpose)


def outbound_message(patient_id, rendered: rendering.Rendered, *, reference: str) -> OutboundMessage:
    """The pipeline's message for one rendered template."""
    return OutboundMessage(
        patient_id=patient_id,
        body=rendered.body,
        subject=rendered.subject,
        html=rendered.html,
        unsubscribe_url=rendered.unsubscribe_url,
        template=rendered.template,
        reference=reference,
    )


# --- campaigns ----------------------------------------------------------------------------------------------------


def _check_campaign_parts(*, organization, user, connection, template, saved_view) -> None:
    if template is not None:
        if template.channel != connection.kind:
            raise _problem("templateId", f"is a {template.channel} template; the connection is {connection.kind}")
        if template.category != Category.MARKETING:
            raise _problem("templateId", "must be a marketing template: campaigns send marketing messages")
    if saved_view is not None and not (saved_view.shared or saved_view.owner_id == user.pk):
        raise _problem("audience.savedViewId", "does not exist in this practice")


def _audience_fields(audience_data: dict) -> dict:
    return {"saved_view": audience_data.get("saved_view_id"), "audience_filters": audience_data.get("filters")}


@transaction.atomic
def campaign_create(*, organization, user, data: dict) -> Campaign:
    audience_fields = _audience_fields(data["audience"])
    _check_campaign_parts(
        organization=organization,
        user=user,
        connection=data["connection"],
        template=data["template"],
        saved_view=audience_fields["saved_view"],
    )
    campaign = Campaign(
        organization=organization,
        name=data["name"],
        connection=data["connection"],
        template=data["template"],
        scheduled_at=data.get("scheduled_at"),
        created_by=user,
        **audience_fields,
    )
    campaign.save(force_insert=True)
    return campaign


def _locked_campaign(organization, campaign_id) -> Campaign:
    campaign = Campaign.objects.for_org(organization).select_for_update().filter(id=campaign_id).first()
    if campaign is None:
        raise NotFound("No such campaign.")
    return campaign


@transaction.atomic
def campaign_update(*, organization, user, campaign_id, data: dict) -> Campaign:
    campaign = _locked_campaign(organization, campaign_id)
    if campaign.status != CampaignStatus.DRAFT:
        raise CampaignNotEditable(campaign.status)
    data = dict(data)
    if "audience" in data:
        data.update(_audience_fields(data.pop("audience")))
    _check_campaign_parts(
        organization=organization,
        user=user,
        connection=data.get("connection", campaign.connection),
        template=data.get("template", campaign.template),
        saved_view=data.get("saved_view"),
    )
    changed = assign_fields(
        campaign,
        data,
        fields=("name", "connection", "template", "saved_view", "audience_filters", "scheduled_at"),
        relations={"connection": "connection", "template": "template", "saved_view": "saved_view"},
    )
    if changed:
        campaign.save()
    return campaign


@transaction.atomic
def campaign_delete(*, organization, campaign_id) -> None:
    campaign = _locked_campaign(organization, campaign_id)
    if campaign.status != CampaignStatus.DRAFT:
        raise CampaignNotEditable(campaign.status)
    campaign.delete()


def _transition_guard(campaign: Campaign, action: str, allowed_from: tuple) -> None:
    if campaign.status not in allowed_from:
        raise CampaignTransitionNotAllowed(
            action=action, status=campaign.status, allowed_from=[str(status) for status in allowed_from]
        )


def _launch_filters(campaign: Campaign, user) -> dict:
    if campaign.saved_view_id is not None:
        view = campaign.saved_view
        if not (view.shared or view.owner_id in (user.pk, campaign.created_by_id)):
            raise CampaignNotReady("the saved view is not shared with you", field="audience")
        return view.filters or {}
    if campaign.audience_filters is None:
        raise CampaignNotReady(
            "the saved view of the audience was deleted: choose the audience again", field="audience"
        )
    return campaign.audience_filters


@transaction.atomic
def campaign_launch(*, organization, user, campaign_id, hourly_limit, daily_limit, now: datetime | None = None):
    """Freeze the audience (one INSERT … SELECT) and start sending, now or at scheduledAt. Returns the campaign and
    the frozen recipients counted: {"pending": n, "<skip reason>": n, …}."""
    now = now or timezone.now()
    campaign = _locked_campaign(organization, campaign_id)
    _transition_guard(campaign, "launched", (CampaignStatus.DRAFT,))
    template = campaign.template
    if template is None:
        raise CampaignNotReady("the template was deleted: choose another", field="templateId")
    check_campaign_template(template)
    connection = campaign.connection
    if connection.status not in SENDING_CONNECTION_STATUSES:
        raise CampaignNotReady("the channel connection is disconnected", field="connectionId")
    filters = _launch_filters(campaign, user)
    try:
        counts = audience.freeze(
            campaign=campaign, organization=organization, connection=connection, filters=filters, now=now
        )
    except audience.AudienceInvalid as invalid:
        raise CampaignNotReady(f"the audience's filters are no longer valid ({invalid})", field="audience") from None
    campaign.content = rendering.campaign_content(rendering.content_of(template))
    campaign.hourly_limit, campaign.daily_limit = hourly_limit, daily_limit
    campaign.launched_at, campaign.launched_by = now, user
    campaign.hour_window_start = campaign.day_window_start = None
    campaign.hour_released = campaign.day_released = 0
    if campaign.scheduled_at is not None and campaign.scheduled_at > now:
        campaign.status, campaign.release_after = CampaignStatus.SCHEDULED, campaign.scheduled_at
    else:
        campaign.status, campaign.release_after, campaign.release_heartbeat_at = CampaignStatus.SENDING, None, now
        _start_release_after_commit(campaign.id)
    campaign.save()
    return campaign, counts


def _start_release_after_commit(campaign_id) -> None:
    from apps.campaigns.release import start_release

    transaction.on_commit(lambda: start_release(campaign_id))


@transaction.atomic
def campaign_pause(*, organization, user, campaign_id) -> Campaign:
    """scheduled or sending → paused: nothing more is released. Locking the campaign row waits for a batch being
    released right now (apps.campaigns.release holds the row FOR KEY SHARE while it works), and a batch that starts
    after sees the pause. Messages already handed to the pipeline stay queued and go (cancel withdraws them)."""
    campaign = _locked_campaign(organization, campaign_id)
    _transition_guard(campaign, "paused", (CampaignStatus.SCHEDULED, CampaignStatus.SENDING))
    campaign.status, campaign.paused_at, campaign.pause_reason = CampaignStatus.PAUSED, timezone.now(), ""
    campaign.save()
    return campaign


@transaction.atomic
def campaign_resume(*, organization, user, campaign_id, now: datetime | None = None) -> Campaign:
    """paused → sending (or scheduled, when its time is still to come)."""
    now = now or timezone.now()
    campaign = _locked_campaign(organization, campaign_id)
    _transition_guard(campaign, "resumed", (CampaignStatus.PAUSED,))
    campaign.paused_at, campaign.pause_reason = None, ""
    if campaign.scheduled_at is not None and campaign.scheduled_at > now:
        campaign.status, campaign.release_after = CampaignStatus.SCHEDULED, campaign.scheduled_at
    else:
        campaign.status, campaign.release_after, campaign.release_heartbeat_at = CampaignStatus.SENDING, None, now
        _start_release_after_commit(campaign.id)
    campaign.save()
    return campaign


CAMPAIGN_CANCELLED = "CAMPAIGN_CANCELLED"  # the error code of a message withdrawn by a cancel
WITHDRAW_TOGETHER = 1000  # message ids per withdraw_queued call


@transaction.atomic
def campaign_cancel(*, organization, user, campaign_id) -> Campaign:
    """scheduled, sending or paused → cancelled. The recipients still pending are marked cancelled, and so are the
    released ones whose message is still waiting in the pipeline's queue (for its first send, a retry or the end of
    quiet hours): that message is withdrawn (failed with error code CAMPAIGN_CANCELLED, message.status_changed).
    A message a worker is sending at this moment, and those already sent, stay as they are.

    Lock order: the campaign row (FOR UPDATE: waits for a batch being released, which holds it FOR KEY SHARE), then
    the recipients, then the messages — the order a release batch takes them in, so the two cannot deadlock, and the
    messages of the batch that was in flight are withdrawn too."""
    campaign = _locked_campaign(organization, campaign_id)
    _transition_guard(campaign, "cancelled", (CampaignStatus.SCHEDULED, CampaignStatus.SENDING, CampaignStatus.PAUSED))
    now = timezone.now()
    campaign.status, campaign.cancelled_at = CampaignStatus.CANCELLED, now
    campaign.save()
    recipients = CampaignRecipient.objects.for_org(organization).filter(campaign=campaign)
    recipients.filter(state=RecipientState.PENDING).update(state=RecipientState.CANCELLED, updated_at=now)
    queued = list(
        recipients.filter(state=RecipientState.RELEASED, message__status=Message.State.QUEUED).values_list(
            "message_id", flat=True
        )
    )
    withdrawn = 0
    for start in range(0, len(queued), WITHDRAW_TOGETHER):
        withdrawn += withdraw_queued(
            organization=organization, message_ids=queued[start : start + WITHDRAW_TOGETHER], reason=CAMPAIGN_CANCELLED
        )
    if withdrawn:
        recipients.filter(
            state=RecipientState.RELEASED, message__status=Message.State.FAILED, message__error_code=CAMPAIGN_CANCELLED
        ).update(state=RecipientState.CANCELLED, updated_at=now)
    return campaign


# --- test sends ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TestSend:
    address: str
    rendered: rendering.Rendered


def own_address(organization, user, channel: str) -> str:
    """The sender's own address on the channel: their account's e-mail address for e-mail, only once verified (409
    TEST_SEND_ADDRESS_UNVERIFIED), the mobile number on their profile (PATCH /user/me phoneMobile, E.164) for the
    phone channels (409 TEST_SEND_ADDRESS_MISSING without one). A contact the practice has blocked on the channel
    gets nothing, test sends included: 409 with the pipeline's own reason as the code (CONTACT_BLOCKED, or
    ADDRESS_SUPPRESSED for an e-mail address that bounced or complained)."""
    if channel == Channel.EMAIL:
        if user.email_verified_at is None:
            raise TestSendAddressUnverified()
        address, contact = user.email, user.email.strip().lower()  # an e-mail contact is keyed lower-cased
    elif user.phone_mobile:
        address = contact = user.phone_mobile  # E.164, as the profile stores it and a number contact is keyed
    else:
        raise TestSendAddressMissing(channel, "mobile number")
    reason = (
        ContactBlock.objects.for_org(organization)
        .filter(channel=BLOCK_CHANNEL[channel], address=contact, blocked=True)
        .values_list("reason", flat=True)
        .first()
    )
    if reason is not None:
        raise TestSendContactBlocked(
            ADDRESS_SUPPRESSED if reason.startswith("email_") else CONTACT_BLOCKED, channel=channel
        )
    return address


def render_for_sender(*, organization, user, campaign: Campaign, patient=None) -> TestSend:
    """The campaign's message as a recipient would get it, rendered with the chosen patient's values (or sample
    values), for the sender's own address. The opt-out link is a real link that records nothing (no patient)."""
    template = campaign.template
    if campaign.content is not None:
        content = campaign.content
    elif template is not None:
        check_campaign_template(template)
        content = rendering.content_of(template)
    else:
        raise CampaignNotReady("the template was deleted: choose another", field="templateId")
    content = rendering.campaign_content(content)
    channel = content["channel"]
    address = own_address(organization, user, channel)
    if patient is not None:
        values = rendering.values_for(organization, [patient.id], names=content["variables"]).get(patient.id, {})
    else:
        values = rendering.sample_values(organization, user_name=user.name)
    url = rendering.opt_out_url(
        organization_id=organization.pk, patient_id=tokens.NO_PATIENT, channel=channel, campaign_id=campaign.id
    )
    try:
        rendered = rendering.render(content, values, unsubscribe_url=url)
    except variables.MissingValue as missing:
        raise TemplateVariableMissing(missing.name) from None
    refused = check_rendered(channel, rendered)
    if refused:
        raise _problem("body", f"the rendered message cannot be sent ({refused})")
    return TestSend(address, rendered)


@dataclass(frozen=True)
class TestSent:
    channel: str
    to: str
    subject: str


def campaign_test_send(*, organization, user, campaign: Campaign, patient=None) -> TestSent:
    """Render the campaign's message for the sender and send it to their own address through the channel's provider
    pipeline (apps.conversations.public.send_test_message: the same adapter and transport a recipient's message
    takes, after the commit, by a worker), marked [Test]: the subject of an e-mail, the start of a text. A
    messaging-app template goes as the approved template, with the rendered values as its parameters."""
    prepared = render_for_sender(organization=organization, user=user, campaign=campaign, patient=patient)
    rendered = prepared.rendered
    subject = f"[Test] {rendered.subject}" if rendered.subject else ""
    body = rendered.body if subject else f"[Test] {rendered.body}"
    message = OutboundMessage(
        patient_id=None,  # a sample: no patient behind it
        body=body,
        subject=subject,
        html=rendered.html,
        unsubscribe_url=rendered.unsubscribe_url,
        template=rendered.template,
    )
    send_test_message(
        organization=organization, connection_id=campaign.connection_id, to_address=prepared.address, message=message
    )
    return TestSent(channel=campaign.connection.kind, to=prepared.address, subject=subject)


# --- opt-out links ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unsubscribed:
    practice_name: str
    channel: str  # the consent channel: sms, whatsapp or email
    recorded: bool  # False: already opted out (or the patient is no longer on record): nothing new


def _survivor(organization, patient_id):
    """The patient the token names, following merges to the surviving record; None when it no longer exists."""
    for _ in range(10):
        patient = Patient.objects.for_org(organization).filter(id=patient_id).first()
        if patient is None or patient.merged_into_id is None:
            return patient
        patient_id = patient.merged_into_id
    return None


def unsubscribe(token: str) -> Unsubscribed | None:
    """Record the opt-out a signed token asks for: the channel's consent withdrawn (source unsubscribe_link, the
    campaign and the token's digest as evidence), which sets the patient's opt-out flag, and the campaign recipient
    marked unsubscribed. Idempotent: a patient already opted out on the channel gets nothing new. None for a token
    that does not verify (the route's 404; nothing is recorded)."""
    opt_out = tokens.read(token)
    if opt_out is None:
        return None
    organization = Organization.objects.filter(pk=opt_out.organization_id).first()
    if organization is None:
        return None
    channel = CONSENT_CHANNEL[opt_out.channel]
    with transaction.atomic():
        campaign = None
        if opt_out.campaign_id is not None:
            campaign = Campaign.objects.for_org(organization).filter(id=opt_out.campaign_id).first()
        patient = _survivor(organization, opt_out.patient_id)
        if patient is None:
            return Unsubscribed(organization.name, channel, recorded=False)
        patient = Patient.objects.for_org(organization).select_for_update().get(id=patient.id)
        latest = (
            MarketingConsent.objects.for_org(organization)
            .filter(patient=patient, channel=channel)
            .order_by("-recorded_at", "-id")
            .values_list("status", flat=True)
            .first()
        )
        opted_out = getattr(patient, f"{channel}_opt_out")
        recorded = False
        if not (opted_out and latest in (None, MarketingConsent.State.WITHDRAWN)):
            where = f"campaign {campaign.id} ({campaign.name})" if campaign else "a message sent from a template"
            consent_record(
                organization=organization,
                user=None,
                patient=patient,
                channel=channel,
                status=MarketingConsent.State.WITHDRAWN,
                source="unsubscribe_link",
                evidence=f"Opt-out link of {where}; token sha256 {tokens.digest(token)}",
            )
            recorded = True
        if campaign is not None:
            CampaignRecipient.objects.for_org(organization).filter(
                campaign=campaign, patient_id=opt_out.patient_id, unsubscribed_at__isnull=True
            ).update(unsubscribed_at=timezone.now(), updated_at=timezone.now())
    return Unsubscribed(organization.name, channel, recorded)


@dataclass(frozen=True)
class OptOutTarget:
    practice_name: str
    channel: str  # the consent channel


def unsubscribe_target(token: str) -> OptOutTarget | None:
    """What a token would opt out of (for the confirmation page), recording nothing; None when it does not verify."""
    opt_out = tokens.read(token)
    if opt_out is None:
        return None
    organization = Organization.objects.filter(pk=opt_out.organization_id).first()
    if organization is None:
        return None
    return OptOutTarget(organization.name, CONSENT_CHANNEL[opt_out.channel])
