"""GET /conversations/{id}/messages/{messageId}/attachments/{attachmentId}: an inbound attachment's stored copy
(tag "inbox", permission inbox:work). Files are served only through this route, never by a storage URL."""

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema

from apps.conversations import attachments
from apps.conversations.api.inbox import TAGS, InboxView
from apps.core.schema import ApiErrorSerializer


class AttachmentDownloadView(InboxView):
    permission = "inbox:work"

    def perform_content_negotiation(self, request, force=False):
        # The bytes are answered whatever Accept says (a browser link asks for */* or a file type); errors stay JSON.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        tags=TAGS,
        operation_id="inbox_attachments_download",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY,
                description="The file's bytes. Content-Type is the type the provider gave for it (application/"
                "octet-stream when it gave none usable), with Content-Disposition: attachment, "
                "X-Content-Type-Options: nosniff and a sandboxing Content-Security-Policy.",
            ),
            404: OpenApiResponse(
                ApiErrorSerializer,
                description="NOT_FOUND: no such conversation, message or attachment (another practice's ids "
                "included), or the stored file is missing.",
            ),
            409: OpenApiResponse(
                ApiErrorSerializer,
                description="ATTACHMENT_NOT_READY: the file is still being copied from the provider (retries "
                "take up to a few minutes); try again later.",
            ),
            410: OpenApiResponse(
                ApiErrorSerializer,
                description="ATTACHMENT_UNAVAILABLE: the copy failed for good (the provider's file expired or "
                "was refused, or it is over 25 MiB).",
            ),
        },
        summary="Download a message's attachment",
        description="Permission inbox:work. Inbound attachments are stored with their message when it arrives and "
        "copied from the provider to the practice's storage in the background; a message's `attachments[].state` "
        "says where that stands (pending, stored, unavailable). Only a stored attachment is downloadable: pending "
        "answers 409 ATTACHMENT_NOT_READY, unavailable 410 ATTACHMENT_UNAVAILABLE. An unreachable store answers "
        "503 with Retry-After.",
    )
    def get(self, request, id, message_id, attachment_id):
        conversation = self.conversation(id)
        attachment = attachments.attachment_of(
            organization=self.organization,
            conversation=conversation,
            message_id=message_id,
            attachment_id=attachment_id,
        )
        download = attachments.open_download(attachment)
        response = FileResponse(
            download.handle, content_type=download.content_type, as_attachment=True, filename=download.filename
        )
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        response["Cache-Control"] = "private, no-store"
        return response
