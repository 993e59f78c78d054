"""Referral routes: programme settings, a patient's advocate tokens, and the public /referral/* pages."""

import logging

from django.conf import settings
from django.db import DatabaseError
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.core.limits import MinuteWindowLimit, TokenBucketLimit
from apps.core.pagination import offset_page
from apps.core.views import BaseApiView
from apps.patients.public import Patient
from apps.referrals import selectors, services
from apps.referrals.api import serializers as s
from apps.referrals.errors import ReferralNotFound, ReferralNotStored
from apps.referrals.models import Advocate, ReferralProgramme, Reward
from apps.referrals.renderers import ProgressItemSerializer, RewardSerializer, public_status, share_url, status_url

logger = logging.getLogger("apps.referrals")

TAGS = ["referrals"]
REFERRAL_BODY_BYTES = 256 * 1024


def _practice_key(request, view) -> str | None:
    return str(view.practice_id) if view.practice_id else None


# The public abuse screen (300 a minute per client address; fails open like capture's) and the spec's buckets,
# keyed per practice. Unknown tokens pass the screen only: they never reach a practice's bucket.
PUBLIC_SCREEN = MinuteWindowLimit("referral.public", rate=lambda: settings.SVC_PUBLIC_SCREEN_RATE, fail_open=True)
CONFIG_BUCKET = TokenBucketLimit("referral.config", setting="SVC_REFERRAL_CONFIG_BUCKET", key=_practice_key)
SUBMIT_BUCKET = TokenBucketLimit("referral.submit", setting="SVC_REFERRAL_SUBMIT_BUCKET", key=_practice_key)
STATUS_BUCKET = TokenBucketLimit("referral.status", setting="SVC_REFERRAL_STATUS_BUCKET", key=_practice_key)


# --- settings: programmes -------------------------------------------------------------------------------------------


class ProgrammesView(BaseApiView):
    scope_area = "campaigns"

    def programme(self, id) -> ReferralProgramme:
        return self.get_tenant_object(ReferralProgramme, id)


class ProgrammeListView(ProgrammesView):
    permission = {"GET": "campaign:read", "POST": "campaign:update"}

    @extend_schema(
        tags=TAGS,
        operation_id="referral_programmes_list",
        parameters=[s.ProgrammeListQuerySerializer],
        responses={200: s.ProgrammePageSerializer},
        summary="The practice's referral programmes, newest first",
        description="Permission campaign:read. {items, total, limit, offset}.",
    )
    def get(self, request):
        query = self.parse_query(s.ProgrammeListQuerySerializer).validated_data
        rows, total = selectors.programmes_page(organization=self.organization, **query)
        return offset_page(s.ProgrammeSerializer(rows, many=True).data, total, **query)

    @extend_schema(
        tags=TAGS,
        operation_id="referral_programmes_create",
        request=s.ProgrammeWriteSerializer,
        responses={201: s.ProgrammeSerializer},
        summary="Create a referral programme (reward, success stage, page texts)",
        description="Permission campaign:update. successStageId is a journey stage of the practice: a referral "
        "succeeds, and its advocate's reward is recorded once, when the referred friend's journey reaches that "
        "stage, a later stage of the same pipeline, or is won (never a lost stage). Without it, when the journey "
        "is won. An archived stage is 400.",
    )
    def post(self, request):
        data = self.parse_body(s.ProgrammeWriteSerializer).validated_data
        programme = services.programme_create(organization=self.organization, data=dict(data))
        return Response(s.ProgrammeSerializer(programme).data, status=201)


class ProgrammeView(ProgrammesView):
    permission = {"GET": "campaign:read", "PATCH": "campaign:update"}

    @extend_schema(
        tags=TAGS,
        operation_id="referral_programmes_read",
        responses={200: s.ProgrammeSerializer},
        summary="Read one referral programme",
        description="Permission campaign:read. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.ProgrammeSerializer(self.programme(id)).data)

    @extend_schema(
        tags=TAGS,
        operation_id="referral_programmes_update",
        request=s.ProgrammeWriteSerializer,
        responses={200: s.ProgrammeSerializer},
        summary="Update any subset of a referral programme's fields",
        description="Permission campaign:update. active=false closes the programme: its share links answer 404 "
        "(status pages keep answering); rewards already recorded stay.",
    )
    def patch(self, request, id):
        programme = self.programme(id)
        data = self.parse_body(s.ProgrammeWriteSerializer, partial=True).validated_data
        programme = services.programme_update(organization=self.organization, programme=programme, data=dict(data))
        return Response(s.ProgrammeSerializer(programme).data)


class ProgrammeReferralsView(ProgrammesView):
    permission = "campaign:read"

    @extend_schema(
        tags=TAGS,
        operation_id="referral_programmes_referrals",
        parameters=[s.ReferralListQuerySerializer],
        responses={200: s.ReferralPageSerializer},
        summary="The referrals made through a programme, newest first, with their rewards",
        description="Permission campaign:read. {items, total, limit, offset}; status filters (submitted, successful, "
        "duplicate: a friend the practice already knew, who made no new lead). Another practice's programme is 404.",
    )
    def get(self, request, id):
        programme = self.programme(id)
        query = self.parse_query(s.ReferralListQuerySerializer).validated_data
        rows, total = selectors.referrals_page(
            organization=self.organization,
            programme=programme,
            status=query.get("status"),
            limit=query["limit"],
            offset=query["offset"],
        )
        items = s.ReferralRowSerializer(rows, many=True).data
        return offset_page(items, total, limit=query["limit"], offset=query["offset"])


class RewardListView(ProgrammesView):
    permission = "campaign:read"

    @extend_schema(
        tags=TAGS,
        operation_id="referral_rewards_list",
        parameters=[s.RewardListQuerySerializer],
        responses={200: s.RewardPageSerializer},
        summary="The rewards advocates have earned, across programmes: paid=false is the payout to-do list",
        description="Permission campaign:read. {items, total, limit, offset}. paid=false lists the rewards still to "
        "give, oldest first; otherwise newest first. Each row names the advocate (a patient), the referral and "
        "friend that earned it, and, once given, when, by whom and the note. programmeId narrows to one programme "
        "(another practice's is 400).",
    )
    def get(self, request):
        query = self.parse_query(s.RewardListQuerySerializer).validated_data
        programme = query.get("programme_id")
        rows, total = selectors.rewards_page(
            organization=self.organization,
            paid=query.get("paid"),
            programme_id=programme.id if programme else None,
            limit=query["limit"],
            offset=query["offset"],
        )
        return offset_page(
            s.RewardRowSerializer(rows, many=True).data, total, limit=query["limit"], offset=query["offset"]
        )


class RewardPayView(ProgrammesView):
    permission = "campaign:update"
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="referral_rewards_mark_paid",
        request=s.RewardPaySerializer,
        responses={200: s.RewardRowSerializer},
        summary="Mark a reward as given to its advocate",
        description="Permission campaign:update. Records when and by whom, with an optional note (how it was "
        "given). The advocate's status page then shows the reward as paid. Once only: a reward already marked is "
        "409 REFERRAL_REWARD_ALREADY_PAID (details.paidAt) and nothing changes. Another practice's reward is 404.",
    )
    def post(self, request, id):
        reward = self.get_tenant_object(Reward, id)
        data = self.parse_body(s.RewardPaySerializer).validated_data
        services.reward_mark_paid(
            organization=self.organization, reward_id=reward.id, user=request.user, note=data.get("note", "")
        )
        return Response(
            s.RewardRowSerializer(selectors.reward(organization=self.organization, reward_id=reward.id)).data
        )


# --- a patient's advocate tokens ------------------------------------------------------------------------------------


def _tokens(advocate: Advocate) -> dict:
    return {
        "advocate_id": advocate.id,
        "programme_id": advocate.programme_id,
        "patient_id": advocate.patient_id,
        "share_token": advocate.share_token,
        "share_url": share_url(advocate),
        "status_token": advocate.status_token,
        "status_url": status_url(advocate),
        "rotated_at": advocate.rotated_at,
    }


class AdvocateTokenView(BaseApiView):
    scope_area = "patients"
    permission = "patient:update"
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="patients_referral_token",
        request=s.AdvocateIssueSerializer,
        responses={201: s.AdvocateTokensSerializer, 200: s.AdvocateTokensSerializer},
        summary="Make the patient an advocate of a programme: their share and status tokens",
        description="Permission patient:update. The first call enrols the patient (201); a repeat answers the same "
        "tokens (200); rotate=true issues new ones (200) and the previous tokens answer 404 at once. The share "
        "token goes in the link the patient gives friends (GET /referral/{shareToken}); the status token is the "
        "patient's own progress page (GET /referral/{statusToken}/status). An inactive programme is 409 "
        "REFERRAL_PROGRAMME_INACTIVE; a merged patient 409 PATIENT_MERGED; another practice's patient or "
        "programme 404 / 400.",
    )
    def post(self, request, id):
        patient = self.get_tenant_object(Patient, id)
        data = self.parse_body(s.AdvocateIssueSerializer).validated_data
        issued = services.advocate_issue(
            organization=self.organization, patient=patient, programme=data["programme"], rotate=data["rotate"]
        )
        return Response(_tokens(issued.advocate), status=201 if issued.created else 200)


# --- public: /referral/* ---------------------------------------------------------------------------------------------


class PublicReferralView(BaseApiView):
    public = True
    practice_id = None

    def screened(self, request, advocate_or_referral, bucket: TokenBucketLimit):
        """The abuse screen for every request, then 404 for no record, then the practice's bucket."""
        PUBLIC_SCREEN.check(request, self)
        if advocate_or_referral is None:
            raise ReferralNotFound()
        self.practice_id = advocate_or_referral.organization_id
        bucket.check(request, self)
        return advocate_or_referral


class ReferralPageView(PublicReferralView):
    @extend_schema(
        tags=TAGS,
        operation_id="referral_page_config",
        summary="The referral page a friend opens from an advocate's share link",
        description="Public; the advocate share token is the boundary. The practice's and programme's names, the "
        "page texts, the consent wording and the reward, and the advocate's first name (nothing else about "
        "them). Unknown, rotated, tampered and other-kind tokens and inactive programmes answer the same 404. "
        "Limits: 120 burst, 4 per second per practice; 300 per minute per client address.",
        responses={200: s.PageConfigSerializer},
        auth=[],
    )
    def get(self, request, token):
        advocate = self.screened(request, selectors.advocate_for_share_token(token), CONFIG_BUCKET)
        programme = advocate.programme
        return Response(
            {
                "practice_name": advocate.organization.name,
                "programme_name": programme.name,
                "advocate_first_name": (advocate.patient.first_name or "").strip(),
                "page_title": programme.page_title,
                "page_intro": programme.page_intro,
                "consent_text": programme.consent_text,
                "thank_you_text": programme.thank_you_text,
                "reward_description": programme.reward_description,
            }
        )


class ReferralSubmitView(PublicReferralView):
    max_body_bytes = REFERRAL_BODY_BYTES

    @extend_schema(
        tags=TAGS,
        operation_id="referral_submit",
        request=s.SubmitSerializer,
        summary="A friend sends their details through an advocate's share link",
        description="Public; the advocate share token is the boundary. JSON body at most 256 KiB (413 before "
        "parsing). firstName and one of email or phone are required. The friend becomes a lead of the practice "
        '(lead source "Referral", referred by the advocate, a journey opened on the general enquiry); with '
        "marketingConsent=true the consent is recorded for e-mail and/or SMS with the wording shown as evidence. "
        "A friend the practice already knows makes no new lead and earns no reward, with the same answer. 201 "
        "carries the friend's own patient token (GET /referral/{patientToken}/status). A submission that could "
        "not be stored answers 503 REFERRAL_NOT_STORED with Retry-After: nothing was kept, send it again. "
        "Limits: 60 burst, 1 per second per practice; 300 per minute per client address.",
        responses={
            201: s.SubmittedSerializer,
            413: OpenApiResponse(description="Body over 256 KiB."),
            503: OpenApiResponse(description="Could not be stored; Retry-After."),
        },
        auth=[],
    )
    def post(self, request, token):
        advocate = self.screened(request, selectors.advocate_for_share_token(token), SUBMIT_BUCKET)
        data = self.parse_body(s.SubmitSerializer).validated_data
        try:
            referral = services.referral_submit(advocate=advocate, data=dict(data))
        except DatabaseError as exc:
            logger.warning("referral not stored (%s); answered 503", type(exc).__name__)
            raise ReferralNotStored() from None
        return Response(
            {"ok": True, "patient_token": referral.patient_token, "thank_you_text": advocate.programme.thank_you_text},
            status=201,
        )


class ReferralStatusView(PublicReferralView):
    @extend_schema(
        tags=TAGS,
        operation_id="referral_status",
        summary="Referral progress: the advocate's (status token) or the referred friend's own (patient token)",
        description="Public; the token is the boundary. With the advocate's status token: the programme, each "
        "referral as initials, status (submitted / successful) and dates (never names or contact details), and "
        "the rewards recorded. With a referred friend's patient token: that one referral's status. A share "
        "token, an unknown, rotated or tampered token answers 404. Limits: 120 burst, 2 per second per "
        "practice; 300 per minute per client address.",
        responses={
            200: s.StatusPageSerializer,
        },
        auth=[],
    )
    def get(self, request, token):
        advocate = selectors.advocate_for_status_token(token)
        if advocate is not None:
            self.screened(request, advocate, STATUS_BUCKET)
            progress = selectors.advocate_progress(advocate)
            return Response(
                {
                    "kind": "advocate",
                    "practice_name": advocate.organization.name,
                    "programme_name": advocate.programme.name,
                    "programme_active": advocate.programme.active,
                    "reward_description": advocate.programme.reward_description,
                    "referrals": ProgressItemSerializer(progress["referrals"], many=True).data,
                    "rewards": RewardSerializer(progress["rewards"], many=True).data,
                }
            )
        referral = self.screened(request, selectors.referral_for_patient_token(token), STATUS_BUCKET)
        return Response(
            {
                "kind": "referred",
                "practice_name": referral.organization.name,
                "programme_name": referral.programme.name,
                "status": public_status(referral),
                "submitted_at": referral.created_at,
            }
        )
