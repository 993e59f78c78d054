"""Templates and campaigns routes: thin views that parse, call one selector or service, and render."""

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response

from apps.campaigns import pages, selectors, services
from apps.campaigns.api import serializers as s
from apps.campaigns.variables import VARIABLES
from apps.core.browser_pages import wants_html
from apps.core.errors import NotFound
from apps.core.limits import MinuteWindowLimit, TokenBucketLimit
from apps.core.pagination import offset_page
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.schema import ApiErrorSerializer
from apps.core.views import BaseApiView

TEMPLATE_TAGS = ["templates"]
CAMPAIGN_TAGS = ["campaigns"]
VARIABLE_LIST = ", ".join(f"{{{{{name}}}}}" for name in VARIABLES)


class TemplatesView(BaseApiView):
    scope_area = "campaigns"
    renderer_classes = [CamelCaseJSONRenderer]

    def template(self, id):
        template = selectors.template_get(organization=self.organization, template_id=id)
        if template is None:
            raise NotFound("No such message template.")
        return template


class TemplateListView(TemplatesView):
    permission = {"GET": "campaign:read", "POST": "campaign:create"}

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="templates_list",
        parameters=[s.TemplateListQuerySerializer],
        responses={200: s.TemplatePageSerializer},
        summary="List message templates (by name), optionally of one channel, category or approval status",
        description="Permission campaign:read.",
    )
    def get(self, request):
        data = self.parse_query(s.TemplateListQuerySerializer).validated_data
        rows, total = selectors.template_page(
            organization=self.organization,
            query=selectors.TemplateQuery(
                channel=data.get("channel"), category=data.get("category"), approval_status=data.get("approval_status")
            ),
            limit=data["limit"],
            offset=data["offset"],
        )
        return offset_page(
            s.TemplateSerializer(rows, many=True).data, total, limit=data["limit"], offset=data["offset"]
        )

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="templates_create",
        request=s.TemplateCreateSerializer,
        responses={201: s.TemplateSerializer},
        summary="Create a message template for one channel (sms, messaging_app, email, telephony_messaging)",
        description="Permission campaign:create. Variables are written {{name}}, from: "
        f"{VARIABLE_LIST}. An unknown variable, {{{{unsubscribe.link}}}} in a service template, or braces that do "
        "not form a variable answer 400 naming the field (details.fields) and the variable (details.variable). "
        "E-mail needs a subject and may have an HTML part; subject and html are refused on the other channels. "
        "A messaging-app template stands for a provider template (providerTemplateName, language: required) whose "
        "{{1}}…{{n}} are this template's variables in order of appearance; it starts pending and only an approved "
        "one is sent (POST /templates/{id}/approval); a marketing one must place {{unsubscribe.link}}.",
    )
    def post(self, request):
        data = self.parse_body(s.TemplateCreateSerializer).validated_data
        template = services.template_create(organization=self.organization, user=request.user, data=data)
        return Response(s.TemplateSerializer(template).data, status=201)


class TemplateView(TemplatesView):
    permission = {"GET": "campaign:read", "PATCH": "campaign:update", "DELETE": "campaign:delete"}
    error_statuses = ("409",)

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="templates_get",
        responses={200: s.TemplateSerializer},
        summary="Read one message template",
        description="Permission campaign:read. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.TemplateSerializer(self.template(id)).data)

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="templates_update",
        request=s.TemplateUpdateSerializer,
        responses={200: s.TemplateSerializer},
        summary="Change any subset of a template's fields (not its channel)",
        description="Permission campaign:update. Validated as on create, on the template as it would be saved. A "
        "messaging-app template whose category, body, providerTemplateName or language changes goes back to pending "
        "(the provider reviews the new one). Campaigns already launched keep the content they were launched with. "
        "The category of a template that a draft, scheduled, sending or paused campaign uses cannot change: 409 "
        "TEMPLATE_CATEGORY_LOCKED (details.campaignIds; campaigns send marketing messages).",
    )
    def patch(self, request, id):
        template = self.template(id)
        data = self.parse_body(s.TemplateUpdateSerializer, partial=True).validated_data
        template = services.template_update(
            organization=self.organization, user=request.user, template_id=template.id, data=data
        )
        return Response(s.TemplateSerializer(template).data)

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="templates_delete",
        responses={204: None},
        summary="Delete a template (409 TEMPLATE_IN_USE while a draft campaign uses it)",
        description="Permission campaign:delete. Launched campaigns keep their own copy of the content.",
    )
    def delete(self, request, id):
        services.template_delete(organization=self.organization, template_id=self.template(id).id)
        return Response(status=204)


class TemplateApprovalView(TemplatesView):
    permission = "settings:update"

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="templates_set_approval",
        request=s.TemplateApprovalSerializer,
        responses={200: s.TemplateSerializer},
        summary="Record the provider's review of a messaging-app template: approved, rejected (with a reason), pending",
        description="Permission settings:update (whoever manages the practice's messaging account records what the "
        "provider decided). Messaging-app templates only (400 for other channels). Only approved templates are sent; "
        "editing the reviewed parts of a template puts it back to pending.",
    )
    def post(self, request, id):
        data = self.parse_body(s.TemplateApprovalSerializer).validated_data
        template = services.template_set_approval(
            organization=self.organization,
            user=request.user,
            template_id=self.template(id).id,
            status=data["status"],
            reason=data.get("reason") or "",
        )
        return Response(s.TemplateSerializer(template).data)


class TemplatePreviewView(TemplatesView):
    permission = "campaign:read"

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="templates_preview",
        parameters=[s.TemplatePreviewQuerySerializer],
        responses={200: s.TemplatePreviewSerializer},
        summary="The template rendered for one patient, as it would be sent",
        description="Permission campaign:read. patientId must be a patient of the practice (400 otherwise). "
        "Variables the patient has no value for (no upcoming appointment) are listed in missingVariables and "
        "rendered empty; the opt-out link of a marketing template is an inert example. E-mail HTML shows the "
        "values HTML-escaped; the other texts show them as sent.",
    )
    def get(self, request, id):
        template = self.template(id)
        patient = self.parse_query(s.TemplatePreviewQuerySerializer).validated_data["patient_id"]
        preview = services.template_preview(organization=self.organization, template=template, patient=patient)
        return Response(s.TemplatePreviewSerializer(preview).data)


class TemplateSendView(TemplatesView):
    permission = "inbox:work"
    scope_area = "conversations"
    error_statuses = ("409",)

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="templates_send",
        request=s.TemplateSendSerializer,
        responses={201: s.TemplateSentSerializer},
        summary="Send a template to one patient on a channel connection (queued in the patient's conversation)",
        description="Permission inbox:work. The message goes through the sending pipeline like a reply: purpose "
        "marketing for a marketing template (the channel's consent needed; the opt-out link added), service "
        "otherwise; source template. The connection must be of the template's channel (400). 409 "
        "TEMPLATE_NOT_APPROVED for a messaging-app template not approved, TEMPLATE_VARIABLE_MISSING when the "
        "patient has no value for a variable (details.variable), MESSAGE_NOT_SENT when the pipeline refuses it "
        "up front (details.reason: NO_ADDRESS, CONTACT_BLOCKED, ADDRESS_SUPPRESSED, OPTED_OUT, NO_CONSENT, "
        "CONNECTION_UNAVAILABLE, …), PATIENT_MERGED for a merged patient.",
    )
    def post(self, request, id):
        template = self.template(id)
        data = self.parse_body(s.TemplateSendSerializer).validated_data
        sent = services.template_send(
            organization=self.organization,
            user=request.user,
            template=template,
            patient=data["patient"],
            connection=data["connection"],
        )
        body = {
            "message_id": sent.message_id,
            "conversation_id": sent.conversation_id,
            "purpose": sent.purpose,
            "status": "queued",
        }
        return Response(s.TemplateSentSerializer(body).data, status=201)


# --- campaigns ----------------------------------------------------------------------------------------------------


class CampaignsView(BaseApiView):
    scope_area = "campaigns"
    renderer_classes = [CamelCaseJSONRenderer]

    def campaign(self, id):
        campaign = selectors.campaign_get(organization=self.organization, campaign_id=id)
        if campaign is None:
            raise NotFound("No such campaign.")
        return campaign

    def detail(self, campaign, *, frozen: dict | None = None) -> dict:
        """The campaign with its totals; right after the launch, from the frozen rows counted by the freeze."""
        data = s.CampaignSerializer(campaign).data
        if frozen is not None:
            data["totals"], data["skipped_reasons"] = selectors.totals_at_launch(frozen)
            return data
        data["totals"] = selectors.campaign_totals(organization=self.organization, campaign_id=campaign.id)
        data["skipped_reasons"] = selectors.skipped_reasons(organization=self.organization, campaign_id=campaign.id)
        return data


class CampaignListView(CampaignsView):
    permission = {"GET": "campaign:read", "POST": "campaign:create"}

    @extend_schema(
        tags=CAMPAIGN_TAGS,
        operation_id="campaigns_list",
        parameters=[s.CampaignListQuerySerializer],
        responses={200: s.CampaignPageSerializer},
        summary="List campaigns, newest first, optionally of one status",
        description="Permission campaign:read. Totals are on GET /campaigns/{id}.",
    )
    def get(self, request):
        data = self.parse_query(s.CampaignListQuerySerializer).validated_data
        rows, total = selectors.campaign_page(
            organization=self.organization, status=data.get("status"), limit=data["limit"], offset=data["offset"]
        )
        return offset_page(
            s.CampaignSerializer(rows, many=True).data, total, limit=data["limit"], offset=data["offset"]
        )

    @extend_schema(
        tags=CAMPAIGN_TAGS,
        operation_id="campaigns_create",
        request=s.CampaignCreateSerializer,
        responses={201: s.CampaignDetailSerializer},
        summary="Create a draft campaign: connection, marketing template of its channel, audience, schedule",
        description="Permission campaign:create. audience is exactly one of savedViewId (yours or a shared view: "
        "its filters as they are at launch) and filters (PatientFilters, as GET /patients takes them). The "
        "template must be a marketing template of the connection's channel (400). scheduledAt: when sending "
        "starts (null: at launch). Nothing is sent until POST /campaigns/{id}/launch.",
    )
    def post(self, request):
        data = self.parse_body(s.CampaignCreateSerializer).validated_data
        campaign = services.campaign_create(organization=self.organization, user=request.user, data=data)
        return Response(self.detail(campaign), status=201)


class CampaignView(CampaignsView):
    permission = {"GET": "campaign:read", "PATCH": "campaign:update", "DELETE": "campaign:delete"}
    error_statuses = ("409",)

    @extend_schema(
        tags=CAMPAIGN_TAGS,
        operation_id="campaigns_get",
        responses={200: s.CampaignDetailSerializer},
        summary="Read one campaign with its totals (recipients by status) and skipped recipients by reason",
        description="Permission campaign:read. totals counts each recipient once: pending (waiting for its "
        "release), queued, sent, delivered, failed (from its message, as the provider reports it), skipped "
        "(see skippedReasons), cancelled (still pending when the campaign was cancelled, or released with a message "
        "still queued, which the cancel withdrew), unsubscribed (used the opt-out link; counted there, not as "
        "delivered).",
    )
    def get(self, request, id):
        return Response(self.detail(self.campaign(id)))

    @extend_schema(
        tags=CAMPAIGN_TAGS,
        operation_id="campaigns_update",
        request=s.CampaignUpdateSerializer,
        responses={200: s.CampaignDetailSerializer},
        summary="Change a draft campaign (409 CAMPAIGN_NOT_EDITABLE once launched)",
        description="Permission campaign:update. Any subset of the create fields, validated the same way.",
    )
    def patch(self, request, id):
        campaign = self.campaign(id)
        data = self.parse_body(s.CampaignUpdateSerializer, partial=True).validated_data
        campaign = services.campaign_update(
            organization=self.organization, user=request.user, campaign_id=campaign.id, data=data
        )
        return Response(self.detail(campaign))

    @extend_schema(
        tags=CAMPAIGN_TAGS,
        operation_id="campaigns_delete",
        responses={204: None},
        summary="Delete a draft campaign (409 CAMPAIGN_NOT_EDITABLE once launched: cancel it instead)",
        description="Permission campaign:delete.",
    )
    def delete(self, request, id):
        services.campaign_delete(organization=self.organization, campaign_id=self.campaign(id).id)
        return Response(status=204)


TRANSITIONS = (
    "Moves: draft → scheduled or sending (launch), scheduled or sending → paused (pause), paused → sending or "
    "scheduled (resume), scheduled, sending or paused → cancelled (cancel); sending → completed happens by itself "
    "when no recipient is left to release. Any other move answers 409 CAMPAIGN_TRANSITION_NOT_ALLOWED with "
    "details.status, details.action and details.allowedFrom."
)


class CampaignLaunchView(CampaignsView):
    permission = "campaign:update"
    error_statuses = ("409",)

    @extend_schema(
        tags=CAMPAIGN_TAGS,
        operation_id="campaigns_launch",
        request=s.LaunchSerializer,
        responses={200: s.CampaignDetailSerializer},
        summary="Launch a draft: freeze its audience as recipients and start sending (now or at scheduledAt)",
        description="Permission campaign:update. The audience is evaluated once, now, and frozen as recipients "
        "(patients added or changed later are not included). Recipients the message cannot reach are kept skipped "
        "with the reason (skippedReasons): PATIENT_INACTIVE (deceased), NO_ADDRESS, CONTACT_BLOCKED, "
        "ADDRESS_SUPPRESSED, OPTED_OUT, NO_CONSENT. hourlyLimit and dailyLimit (optional) pace the background "
        "delivery in the practice's clock hours and calendar days; pacing never answers 429. The message content "
        "is copied from the template now. 409 CAMPAIGN_NOT_READY (details.field) when the template was deleted or "
        "is no longer a marketing template, the saved view was deleted or is not shared with you, or the "
        "connection is disconnected; "
        "TEMPLATE_NOT_APPROVED for a messaging-app template not approved. " + TRANSITIONS,
    )
    def post(self, request, id):
        data = self.parse_body(s.LaunchSerializer).validated_data if request.body else {}
        campaign, frozen = services.campaign_launch(
            organization=self.organization,
            user=request.user,
            campaign_id=self.campaign(id).id,
            hourly_limit=data.get("hourly_limit"),
            daily_limit=data.get("daily_limit"),
        )
        return Response(self.detail(campaign, frozen=frozen))


class CampaignTransitionView(CampaignsView):
    permission = "campaign:update"
    error_statuses = ("409",)
    action = ""

    def post(self, request, id):
        campaign_id = self.campaign(id).id
        change = {
            "pause": services.campaign_pause,
            "resume": services.campaign_resume,
            "cancel": services.campaign_cancel,
        }[self.action]
        campaign = change(organization=self.organization, user=request.user, campaign_id=campaign_id)
        return Response(self.detail(campaign))


def _transition_schema(operation_id: str, summary: str, extra: str):
    return extend_schema(
        tags=CAMPAIGN_TAGS,
        operation_id=operation_id,
        request=None,
        responses={200: s.CampaignDetailSerializer},
        summary=summary,
        description=f"Permission campaign:update. {extra} {TRANSITIONS}",
    )


class CampaignPauseView(CampaignTransitionView):
    action = "pause"

    @_transition_schema(
        "campaigns_pause",
        "Pause a scheduled or sending campaign",
        "Nothing more is released until it is resumed: a batch being released at that moment finishes first (the "
        "answer waits for it) and none starts after. Messages already handed to the sending pipeline stay queued "
        "and go (cancel withdraws them).",
    )
    def post(self, request, id):
        return super().post(request, id)


class CampaignResumeView(CampaignTransitionView):
    action = "resume"

    @_transition_schema(
        "campaigns_resume",
        "Resume a paused campaign",
        "It goes on sending (or waits for scheduledAt), within its pacing.",
    )
    def post(self, request, id):
        return super().post(request, id)


class CampaignCancelView(CampaignTransitionView):
    action = "cancel"

    @_transition_schema(
        "campaigns_cancel",
        "Cancel a scheduled, sending or paused campaign",
        "Recipients still pending are marked cancelled, and so are those released whose message is still waiting "
        "in the sending queue (for its first send, a retry or the end of quiet hours): that message is withdrawn "
        "(failed with errorCode CAMPAIGN_CANCELLED). Messages already sent, or being sent at that moment, stay.",
    )
    def post(self, request, id):
        return super().post(request, id)


class CampaignRecipientsView(CampaignsView):
    permission = "campaign:read"

    @extend_schema(
        tags=CAMPAIGN_TAGS,
        operation_id="campaigns_recipients",
        parameters=[s.RecipientListQuerySerializer],
        responses={200: s.RecipientPageSerializer},
        summary="The recipients of a launched campaign, each with its status (from its message) or skip reason",
        description="Permission campaign:read. status: pending, queued, sent, delivered, failed (the message's "
        "state as the provider reports it; errorCode says why it failed), skipped (skipReason), cancelled (with "
        "messageId and errorCode CAMPAIGN_CANCELLED when its queued message was withdrawn), "
        "unsubscribed (used the opt-out link), released (the message was since erased). In a stable order.",
    )
    def get(self, request, id):
        campaign = self.campaign(id)
        data = self.parse_query(s.RecipientListQuerySerializer).validated_data
        rows, total = selectors.recipient_page(
            organization=self.organization,
            campaign_id=campaign.id,
            status=data.get("status"),
            limit=data["limit"],
            offset=data["offset"],
        )
        return offset_page(
            s.RecipientSerializer(rows, many=True).data, total, limit=data["limit"], offset=data["offset"]
        )


def _test_send_key(request, view) -> str | None:
    user = getattr(request, "user", None)
    if user is None:
        return None
    return f"{user.pk}:{view.kwargs.get('id')}"


TEST_SEND_BUCKET = TokenBucketLimit("campaign.test-send", setting="SVC_CAMPAIGN_TEST_SEND_BUCKET", key=_test_send_key)


class CampaignTestSendView(CampaignsView):
    permission = "campaign:update"
    error_statuses = ("409",)
    rate_limits = (TEST_SEND_BUCKET,)

    @extend_schema(
        tags=CAMPAIGN_TAGS,
        operation_id="campaigns_test_send",
        request=s.TestSendSerializer,
        responses={202: s.TestSentSerializer},
        summary="Send the campaign's message to your own address (e-mail) or phone, to check it",
        description="Permission campaign:update. Rendered like a recipient's message, with the values of patientId "
        "(optional) or sample values, and sent through the channel's provider pipeline to the signed-in member's "
        "own address: the e-mail address of their account once verified (409 TEST_SEND_ADDRESS_UNVERIFIED "
        "otherwise), or for SMS, WhatsApp and texting the mobile number on their profile (PATCH /user/me "
        "phoneMobile; without one 409 TEST_SEND_ADDRESS_MISSING). An address the practice has blocked on the "
        "channel gets nothing: 409 CONTACT_BLOCKED (it sent STOP) or ADDRESS_SUPPRESSED (the e-mail bounced or "
        "complained), details.reason. A draft's template must still be a marketing template (409 "
        "CAMPAIGN_NOT_READY) and, for the messaging app, approved (409 TEMPLATE_NOT_APPROVED). Always rendered as "
        "a marketing message, with its opt-out link, which records nothing. Not stored in any conversation. Limit "
        "(spec: Campaign test sends): 20 burst, 20 per hour, per sender per campaign; 429 with Retry-After when "
        "empty. Works in any status.",
    )
    def post(self, request, id):
        campaign = self.campaign(id)
        data = self.parse_body(s.TestSendSerializer).validated_data if request.body else {}
        sent = services.campaign_test_send(
            organization=self.organization, user=request.user, campaign=campaign, patient=data.get("patient_id")
        )
        return Response(s.TestSentSerializer(sent).data, status=202)


# --- opt-out links (public) ---------------------------------------------------------------------------------------

PUBLIC_SCREEN = MinuteWindowLimit("campaigns.unsubscribe", rate=lambda: settings.SVC_PUBLIC_SCREEN_RATE, fail_open=True)


class FirstRenderer(BaseContentNegotiation):
    """The pages are HTML responses made by the view; whatever DRF renders (a 429, a 405) is the JSON envelope (a
    browser gets a page for it through apps.core.browser_pages)."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


NOT_VALID = (
    "A token that does not verify: an HTML page for browsers, the ApiError envelope otherwise. Nothing is recorded."
)


class UnsubscribeView(BaseApiView):
    public = True
    rate_limits = (PUBLIC_SCREEN,)
    renderer_classes = [CamelCaseJSONRenderer]
    content_negotiation_class = FirstRenderer
    http_method_names = ["get", "head", "post"]

    @staticmethod
    def not_valid(request):
        if wants_html(request):
            return pages.not_found_page(request)
        raise NotFound("No such opt-out link.")

    @extend_schema(
        tags=CAMPAIGN_TAGS,
        operation_id="marketing_unsubscribe_page",
        summary="The opt-out page a patient opens from a marketing message: asks to confirm, records nothing",
        description="Public: the signed token is the boundary. Shows the practice and the channel and a button that "
        "posts to this same URL (a GET never unsubscribes: link scanners open links too). A token that does not "
        "verify answers 404. Limit: 300 requests per minute per client address.",
        responses={
            (200, "text/html"): OpenApiTypes.STR,
            (404, "application/json"): OpenApiResponse(ApiErrorSerializer, description=NOT_VALID),
            (404, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=NOT_VALID),
        },
        auth=[],
    )
    def get(self, request, token):
        found = services.unsubscribe_target(token)
        if found is None:
            return self.not_valid(request)
        return pages.confirm_page(request, practice_name=found.practice_name, channel=found.channel)

    @extend_schema(
        tags=CAMPAIGN_TAGS,
        operation_id="marketing_unsubscribe",
        summary="Opt out with a signed token (the page's button, or a mail client's RFC 8058 one-click POST)",
        description="Public: the signed token (practice, patient, channel, campaign) is the boundary; any body is "
        "accepted and ignored (mail clients send List-Unsubscribe=One-Click). Records the patient's marketing "
        "consent for the channel as withdrawn (source unsubscribe_link, evidence naming the campaign and the "
        "token's SHA-256 digest), which sets the channel's opt-out flag, and marks the campaign recipient "
        "unsubscribed. Idempotent: repeating it answers 200 and records nothing new. A token that does not verify "
        "(tampered, truncated) answers 404 and records nothing. A browser (Accept text/html) gets a page. Limit: "
        "300 requests per minute per client address.",
        request=None,
        responses={
            200: s.UnsubscribedSerializer,
            (200, "text/html"): OpenApiTypes.STR,
            (404, "application/json"): OpenApiResponse(ApiErrorSerializer, description=NOT_VALID),
            (404, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=NOT_VALID),
        },
        auth=[],
    )
    def post(self, request, token):
        done = services.unsubscribe(token)
        if done is None:
            return self.not_valid(request)
        if wants_html(request):
            return pages.done_page(request, practice_name=done.practice_name, channel=done.channel)
        return Response(s.UnsubscribedSerializer({"unsubscribed": True, "channel": done.channel}).data)
