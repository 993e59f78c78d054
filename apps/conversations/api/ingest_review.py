"""The ingest-review queue (tag "ingest-review"): signed provider callbacks for a number or address the practice
has not connected here (a number of its SMS or telephony account that is not set up as a connection), kept instead
of dropped. Those who work the inbox see them; a settings editor replays one into a connection or dismisses it."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apps.conversations import inbound, selectors
from apps.conversations.models import ChannelConnection, Kind, ParkedCallback
from apps.core.errors import NotFound, ValidationFailed
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.serializers import StrictSerializer
from apps.core.views import BaseApiView

TAGS = ["ingest-review"]


class ParkedItemSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["message", "status", "suppression"])
    sender = serializers.CharField(allow_null=True, help_text="Who wrote (messages only).")
    body = serializers.CharField(allow_null=True, help_text="The text (messages only).")
    media_count = serializers.IntegerField()
    status = serializers.CharField(allow_null=True, help_text="The reported delivery status (statuses only).")

    class Meta:
        ref_name = "ParkedCallbackItem"

    def to_representation(self, payload):
        return {
            "type": payload["type"],
            "sender": payload.get("sender"),
            "body": payload.get("body"),
            "media_count": len(payload.get("media") or []),
            "status": payload.get("status"),
        }


class ParkedCallbackSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=Kind.choices)
    receiving_address = serializers.CharField(help_text="The number or address the provider delivered to.")
    reason = serializers.CharField(
        help_text="address_not_connected: no connection of the practice has it; sender_not_matched: a short-video "
        "message no patient stands for (record the sender's handle in the patient's customFields.shortVideoHandle, "
        "then replay it)."
    )
    state = serializers.ChoiceField(choices=ParkedCallback.State.choices)
    items = ParkedItemSerializer(many=True)
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)
    decided_by_id = serializers.UUIDField(allow_null=True)
    replayed_into_id = serializers.UUIDField(allow_null=True, help_text="The connection it was replayed into.")

    class Meta:
        ref_name = "ParkedCallback"


class ParkedPageSerializer(serializers.Serializer):
    items = ParkedCallbackSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "ParkedCallbackPage"


class ParkedQuerySerializer(StrictSerializer):
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100)
    state = serializers.ChoiceField(choices=ParkedCallback.State.choices, required=False, default="parked")
    kind = serializers.ChoiceField(choices=Kind.choices, required=False)


class ReplaySerializer(StrictSerializer):
    connection_id = serializers.UUIDField(help_text="A receiving connection of the practice, of the callback's kind.")


class ReplayResultSerializer(serializers.Serializer):
    parked = ParkedCallbackSerializer()
    stored = serializers.IntegerField(help_text="Items stored for processing into the connection's inbox.")
    duplicates = serializers.IntegerField(help_text="Messages the connection had already received.")

    class Meta:
        ref_name = "ParkedCallbackReplay"


class ReviewView(BaseApiView):
    scope_area = "settings"
    error_statuses = ("409",)

    def parked(self, id) -> ParkedCallback:
        found = selectors.parked_of(organization=self.organization).filter(pk=id).first()
        if found is None:
            raise NotFound("No such parked callback.")
        return found


class ParkedListView(ReviewView):
    permission = "inbox:work"  # the items carry patients' words: those who work the inbox, not every settings reader

    @extend_schema(
        tags=TAGS,
        operation_id="ingest_review_list",
        parameters=[ParkedQuerySerializer],
        responses={200: ParkedPageSerializer},
        summary="Parked provider callbacks waiting for review",
        description="Permission inbox:work (the items carry patients' words). Newest first, cursor paging; state "
        "parked by default (replayed and dismissed ones stay listed under their state). Only callbacks whose route "
        "named this practice are here; callbacks no route could attribute, or for a number another practice has "
        "connected, wait for the platform's operators.",
    )
    def get(self, request):
        query = self.parse_query(ParkedQuerySerializer).validated_data
        paginator = NewestFirstCursorPagination()
        page = paginator.paginate_queryset(
            selectors.parked_of(organization=self.organization, state=query["state"], kind=query.get("kind")),
            request,
            view=self,
        )
        data = ParkedCallbackSerializer(page, many=True).data
        return Response(paginator.get_paginated_response_data(data))


class ParkedItemView(ReviewView):
    permission = "inbox:work"

    @extend_schema(
        tags=TAGS,
        operation_id="ingest_review_get",
        responses={200: ParkedCallbackSerializer},
        summary="One parked callback",
        description="Permission inbox:work. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(ParkedCallbackSerializer(self.parked(id)).data)


class ReplayView(ReviewView):
    permission = "settings:update"

    @extend_schema(
        tags=TAGS,
        operation_id="ingest_review_replay",
        request=ReplaySerializer,
        responses={200: ReplayResultSerializer},
        summary="Assign a parked callback to a connection and replay it",
        description="Permission settings:update. Its items are received by the connection as if they had arrived "
        "for it (messages claim their receipts, so nothing already received is stored twice) and processed into "
        "the inbox. The connection must be the practice's, of the same kind and not disconnected (400 naming "
        "connectionId); a callback already replayed or dismissed answers 409 PARKED_CALLBACK_ALREADY_DECIDED.",
    )
    def post(self, request, id):
        parked = self.parked(id)
        connection_id = self.parse_body(ReplaySerializer).validated_data["connection_id"]
        connection = ChannelConnection.objects.for_org(self.organization).filter(id=connection_id).first()
        if connection is None:
            raise ValidationFailed.for_field("connectionId", "is not a connection of this practice")
        received = inbound.parked_replay(
            organization=self.organization, user=request.user, parked=parked, connection=connection
        )
        result = {"parked": self.parked(id), "stored": received.stored, "duplicates": received.duplicates}
        return Response(ReplayResultSerializer(result).data)


class DismissView(ReviewView):
    permission = "settings:update"

    @extend_schema(
        tags=TAGS,
        operation_id="ingest_review_dismiss",
        request=None,
        responses={200: ParkedCallbackSerializer},
        summary="Dismiss a parked callback",
        description="Permission settings:update. It stays listed under state dismissed; nothing is received. "
        "Already replayed or dismissed: 409 PARKED_CALLBACK_ALREADY_DECIDED.",
    )
    def post(self, request, id):
        parked = inbound.parked_dismiss(organization=self.organization, user=request.user, parked=self.parked(id))
        return Response(ParkedCallbackSerializer(parked).data)
