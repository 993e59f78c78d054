"""Inbound attachments: copied from the provider to the practice's durable storage by a Celery queue.

The attachment row (its provider reference) is stored with the message before the callback is acknowledged
(apps.conversations.inbound); after that commit one `copy_attachment` task per file is published. A copy holds the
row (SELECT … FOR UPDATE SKIP LOCKED: a second worker moves on), fetches the file from the provider, writes it to
`storages[SVC_MEDIA_STORAGE_ALIAS]` under conversations/<practice>/<message>/<attachment> and marks it stored. A
failure is counted with a short reason (never the URL, a credential or the provider's text) and retried with
exponential backoff; after five attempts, or at once when retrying cannot help (the provider's copy is gone, the
file is over 25 MiB, the URL is refused, the provider API is not configured), the attachment is unavailable.

How each provider serves media:

- SMS (Twilio): GET the MediaUrl with HTTP basic auth (account SID, auth token); it redirects to a signed URL.
- Telephony messaging (Telnyx): GET the media URL; `Authorization: Bearer <api key>` when the connection has one.
- Messaging app (WhatsApp Cloud API): GET {graph}/{media id} with the access token → JSON `url`, `mime_type`,
  `file_size`; then GET that url with the same bearer.
- E-mail (Resend): GET {api}/emails/receiving/{email id}/attachments/{attachment id} with the platform API key →
  JSON `download_url`; then GET it without credentials.
- Short-video messages (TikTok Business Messaging): POST {api}/business/message/media/download/ with the account's
  Access-Token and {business_id, conversation_id, message_id, media_id, media_type} → {"code": 0, "data":
  {"download_url"}}; then GET it without credentials.

Every URL (they come from callback bodies, or from the provider's answers) is vetted by the webhooks app's SSRF
guard before the request and at every redirect; the connection goes to the vetted address. Credentials are sent
only to the origin they were meant for, never across a redirect to another host.

Stored files are deleted with the patient: the erasure hook collects them and deletes them after the commit."""

import base64
import json
import logging
import mimetypes
import re
import ssl
import tempfile
import time
from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit

import certifi
import httpx
from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.conversations import senders, short_video
from apps.conversations.connecting import credentials_for_sending
from apps.conversations.errors import AttachmentNotReady, AttachmentStorageUnavailable, AttachmentUnavailable
from apps.conversations.models import Conversation, Health, Kind, MessageAttachment
from apps.conversations.senders import SendFailed
from apps.conversations.services import connection_credentials, connection_record_health
from apps.core.errors import NotFound
from apps.webhooks.public import Destination, UnsafeDestination, check_url_shape, vet

logger = logging.getLogger("apps.conversations")

MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024  # larger files are not copied (unavailable, "too_large")
MAX_ATTEMPTS = 5
RETRY_BASE_SECONDS = 30  # 30 s, 1 min, 2 min, 4 min between the five attempts
SWEEP_AFTER_SECONDS = 600  # a pending attachment untouched this long lost its task: the sweep asks again
TIMEOUT = httpx.Timeout(30.0, connect=5.0)  # connect 5 s; each read (and write, pool wait) 30 s
DOWNLOAD_DEADLINE_SECONDS = 120  # a whole transfer, however slowly the bytes drip (the task's soft limit is 240 s)
CREDENTIALS_REFUSED = frozenset({"provider_http_401", "provider_http_403", "provider_token_refused"})
CLAIM_SECONDS = 300  # a copy's lease: longer than the task may run, so a lapsed lease means a dead worker
MAX_REDIRECTS = 5
MAX_JSON_BYTES = 64 * 1024  # the providers' media-lookup answers are a few hundred bytes
SPOOL_BYTES = 1024 * 1024  # a file is kept in memory up to this size on its way to storage, on disk past it
GONE_STATUSES = frozenset({404, 410})  # the provider no longer has the file: retrying cannot help
_CONTENT_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$")
_SSL_CONTEXT = ssl.create_default_context(cafile=certifi.where())


class CopyFailed(Exception):
    """One attempt failed. `reason` is short and safe to store and log; `final` means retrying cannot help."""

    def __init__(self, reason: str, *, final: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.final = final


@dataclass(frozen=True)
class Fetched:
    size: int
    content_type: str  # what the provider says the file is ("" when it says nothing usable)


def media_storage():
    return storages[settings.SVC_MEDIA_STORAGE_ALIAS]


def storage_name(attachment: MessageAttachment) -> str:
    return f"conversations/{attachment.organization_id}/{attachment.message_id}/{attachment.id}"


def clean_content_type(value: str) -> str:
    """A bare media type (parameters dropped, lower case) when it looks like one; "" otherwise."""
    media_type = (value or "").split(";", 1)[0].strip().lower()
    return media_type if _CONTENT_TYPE.match(media_type) else ""


# --- publishing -----------------------------------------------------------------------------------------------


def request_copies(attachment_ids) -> int:
    """One copy task per attachment (called after the message's commit). A broker failure is logged, never raised:
    the rows are stored, and the sweep asks again for what is still pending. Returns how many were published."""
    return sum(_publish(attachment_id) for attachment_id in attachment_ids)


def _publish(attachment_id, *, countdown: int | None = None) -> bool:
    from apps.conversations.tasks import copy_attachment as task

    try:
        if countdown:
            task.apply_async(args=[str(attachment_id)], countdown=countdown)
        else:
            task.delay(str(attachment_id))
        return True
    except Exception as exc:
        logger.warning("attachment copy %s not requested (%s); left to the sweep", attachment_id, type(exc).__name__)
        return False


def sweep_attachments(*, limit: int = 500) -> int:
    """Pending attachments nobody has tried for ten minutes (a task lost with the broker, or a worker that died
    holding one) are requested again; one whose attempts ran out without being marked is marked unavailable.
    Returns how many copies were requested."""
    cutoff = timezone.now() - timezone.timedelta(seconds=SWEEP_AFTER_SECONDS)
    waiting = MessageAttachment.unscoped_objects.filter(
        state=MessageAttachment.State.PENDING, created_at__lt=cutoff, updated_at__lt=cutoff
    )
    waiting.filter(attempts__gte=MAX_ATTEMPTS).update(
        state=MessageAttachment.State.UNAVAILABLE, last_error="attempts_exhausted", updated_at=timezone.now()
    )
    ids = list(waiting.filter(attempts__lt=MAX_ATTEMPTS).order_by("created_at").values_list("id", flat=True)[:limit])
    return request_copies(ids)


# --- copying --------------------------------------------------------------------------------------------------


def copy_attachment(attachment_id) -> str:
    """One attempt at copying the attachment: "stored", "retrying" (a later attempt is scheduled), "unavailable",
    or "skipped" (not pending any more, gone with its patient, or held by another worker)."""
    outcome, retry_in = _attempt(attachment_id)
    if retry_in is not None:  # published after the failure is committed, so the retry sees its count
        _publish(attachment_id, countdown=retry_in)
    return outcome


def _attempt(attachment_id) -> tuple[str, int | None]:
    """Claim (a short transaction sets a lease), copy with no transaction open (a slow provider holds no database
    connection or row lock), then record the outcome if the lease is still ours. An attachment erased meanwhile
    loses the file this attempt wrote."""
    attachment = _claim(attachment_id)
    if attachment is None:
        return "skipped", None
    lease = attachment.claimed_until
    written, fetched, failure = "", None, None
    try:
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as sink:
            fetched = _fetch(attachment, sink)
            written = _store(attachment, sink, fetched.size)
    except CopyFailed as copy_failure:
        failure = copy_failure
    except Exception as exc:  # a fault of ours: counted like any failure (the type only; no text)
        logger.warning("attachment %s copy raised %s", attachment.id, type(exc).__name__)
        failure = CopyFailed("error")
    with transaction.atomic():
        current = (
            MessageAttachment.unscoped_objects.select_for_update()
            .filter(id=attachment.id, state=MessageAttachment.State.PENDING, claimed_until=lease)
            .first()
        )
        if current is None:
            if written and not MessageAttachment.unscoped_objects.filter(id=attachment.id).exists():
                transaction.on_commit(lambda: _delete_files([written]))  # erased while copying: no orphan file
            return "skipped", None
        current.claimed_until = None
        if failure is not None:
            return _failed(current, failure)
        current.state = MessageAttachment.State.STORED
        current.storage_name = written
        current.size = fetched.size
        current.last_error = ""
        if not clean_content_type(current.content_type) and fetched.content_type:
            current.content_type = fetched.content_type
        current.save(
            update_fields=["state", "storage_name", "size", "last_error", "content_type", "claimed_until", "updated_at"]
        )
        return "stored", None


def _claim(attachment_id) -> MessageAttachment | None:
    """The pending attachment with a lease of CLAIM_SECONDS, unless another worker holds an unexpired one."""
    now = timezone.now()
    with transaction.atomic():
        attachment = (
            MessageAttachment.unscoped_objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("message__conversation__connection")
            .filter(id=attachment_id, state=MessageAttachment.State.PENDING)
            .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
            .first()
        )
        if attachment is not None:
            attachment.claimed_until = now + timezone.timedelta(seconds=CLAIM_SECONDS)
            attachment.save(update_fields=["claimed_until", "updated_at"])
        return attachment


def _failed(attachment: MessageAttachment, failure: CopyFailed) -> tuple[str, int | None]:
    attachment.attempts += 1
    attachment.last_error = failure.reason[:120]
    retry_in = None
    if failure.final or attachment.attempts >= MAX_ATTEMPTS:
        attachment.state = MessageAttachment.State.UNAVAILABLE
        outcome = "unavailable"
    else:
        retry_in = RETRY_BASE_SECONDS * 2 ** (attachment.attempts - 1)
        outcome = "retrying"
    attachment.save(update_fields=["attempts", "last_error", "state", "claimed_until", "updated_at"])
    if failure.reason in CREDENTIALS_REFUSED:  # the provider no longer accepts the connection's credentials
        connection_record_health(
            connection=attachment.message.conversation.connection,
            health=Health.DEGRADED,
            reason="the provider refused the connection's credentials for a media download",
        )
    logger.info(
        "attachment %s copy failed (%s, attempt %d): %s", attachment.id, failure.reason, attachment.attempts, outcome
    )
    return outcome, retry_in


def _store(attachment: MessageAttachment, sink, size: int) -> str:
    """Writes the file under its own name (a leftover of an attempt whose commit failed is replaced)."""
    name = storage_name(attachment)
    sink.seek(0)
    content = File(sink, name=name)
    content.size = size
    try:
        storage = media_storage()
        storage.delete(name)
        return storage.save(name, content)
    except Exception as exc:
        logger.warning("attachment %s storage write failed: %s", attachment.id, type(exc).__name__)
        raise CopyFailed("storage") from None


def _fetch(attachment: MessageAttachment, sink) -> Fetched:
    """Streams the provider's file into `sink`. Raises CopyFailed."""
    connection = attachment.message.conversation.connection
    with httpx.Client(
        follow_redirects=False,  # followed one by one below, each hop vetted
        trust_env=False,
        verify=_SSL_CONTEXT,
        timeout=TIMEOUT,
        limits=httpx.Limits(max_keepalive_connections=0),
    ) as client:
        if connection.kind == Kind.SMS:
            credentials = connection_credentials(connection)
            pair = f"{credentials.get('account_sid', '')}:{credentials.get('auth_token', '')}".encode()
            headers = {"Authorization": "Basic " + base64.b64encode(pair).decode()}
            return _download(client, _provider_url(attachment), headers, sink)
        if connection.kind == Kind.TELEPHONY_MESSAGING:
            api_key = connection_credentials(connection).get("api_key")
            headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
            return _download(client, _provider_url(attachment), headers, sink)
        if connection.kind == Kind.MESSAGING_APP:
            headers = {"Authorization": f"Bearer {connection_credentials(connection).get('access_token', '')}"}
            media = _json(client, f"{settings.SVC_MESSAGING_APP_GRAPH_URL}/{_media_id(attachment)}", headers)
            declared = str(media.get("file_size") or "")
            if declared.isdigit() and int(declared) > MAX_ATTACHMENT_BYTES:
                raise CopyFailed("too_large", final=True)
            fetched = _download(client, _link(media, "url"), headers, sink)
            return Fetched(fetched.size, clean_content_type(str(media.get("mime_type") or "")) or fetched.content_type)
        if connection.kind == Kind.EMAIL:
            if not settings.SVC_EMAIL_PROVIDER_API_KEY:
                raise CopyFailed("not_configured", final=True)
            email_id = quote(attachment.message.provider_message_id, safe="")
            if not email_id:
                raise CopyFailed("no_reference", final=True)
            url = (
                f"{settings.SVC_EMAIL_PROVIDER_API_URL}/emails/receiving/{email_id}/attachments/{_media_id(attachment)}"
            )
            headers = {"Authorization": f"Bearer {settings.SVC_EMAIL_PROVIDER_API_KEY}"}
            return _download(client, _link(_json(client, url, headers), "download_url"), {}, sink)
        if connection.kind == Kind.SHORT_VIDEO:
            return _download(client, _short_video_link(client, attachment, connection), {}, sink)
    raise CopyFailed("unsupported_channel", final=True)


def _short_video_link(client: httpx.Client, attachment: MessageAttachment, connection) -> str:
    """The platform's download URL of a short-video message's image (asked with the account's access token)."""
    message = attachment.message
    if not (attachment.provider_media_id and message.provider_message_id and message.conversation.provider_thread_id):
        raise CopyFailed("no_reference", final=True)
    try:
        credentials = credentials_for_sending(connection, refresh=settings.SVC_OUTBOUND_TRANSPORT != "sandbox")
    except SendFailed as failed:
        raise CopyFailed("provider_token_refused" if failed.credentials_refused else "token_refresh") from None
    payload = short_video.media_lookup(
        business_id=connection.address,
        conversation_id=message.conversation.provider_thread_id,
        message_id=message.provider_message_id,
        media_id=attachment.provider_media_id,
    )
    url = f"{settings.SVC_SHORT_VIDEO_API_URL}/business/message/media/download/"
    answer = _json(client, url, {"Access-Token": credentials.get("access_token", "")}, payload=payload)
    code = str(answer.get("code", ""))
    if code in senders.TIKTOK_TOKEN_REFUSED:
        raise CopyFailed("provider_token_refused")
    if code != "0" or not isinstance(answer.get("data"), dict):
        raise CopyFailed("provider_response")
    return _link(answer["data"], "download_url")


def _provider_url(attachment: MessageAttachment) -> str:
    if not attachment.provider_url:
        raise CopyFailed("no_reference", final=True)
    return attachment.provider_url


def _media_id(attachment: MessageAttachment) -> str:
    if not attachment.provider_media_id:
        raise CopyFailed("no_reference", final=True)
    return quote(attachment.provider_media_id, safe="")


def _link(answer: dict, key: str) -> str:
    value = answer.get(key)
    if not isinstance(value, str) or not value:
        raise CopyFailed("provider_response")
    return value


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port


def _vetted(url: str) -> Destination:
    try:
        check_url_shape(url)
    except UnsafeDestination:
        raise CopyFailed("unsafe_url", final=True) from None
    try:
        return vet(url)  # DNS: a name that does not resolve (now) or resolves to a private address
    except UnsafeDestination:
        raise CopyFailed("unsafe_url") from None


def _get(client: httpx.Client, url: str, headers: dict[str, str], *, payload: dict | None = None) -> httpx.Response:
    """GET (or, with `payload`, a JSON POST) with the response streamed (the caller closes it), redirects followed by
    hand: every hop is vetted and connected to by its vetted address, and `headers` (credentials) go only to the
    first URL's origin. A POST follows no redirect."""
    origin = _origin(url)
    for _ in range(MAX_REDIRECTS + 1):
        destination = _vetted(url)
        request_headers = {**(headers if _origin(url) == origin else {}), "Host": urlsplit(url).netloc}
        extensions = {"sni_hostname": destination.host} if destination.url.startswith("https") else {}
        method, body = ("POST", json.dumps(payload).encode()) if payload is not None else ("GET", None)
        if body is not None:
            request_headers["Content-Type"] = "application/json"
        try:
            request = client.build_request(
                method, destination.url, headers=request_headers, content=body, extensions=extensions
            )
            response = client.send(request, stream=True)
        except httpx.TimeoutException:
            raise CopyFailed("timeout") from None
        except httpx.HTTPError:
            raise CopyFailed("network") from None
        if not response.is_redirect:
            return response
        if payload is not None:
            response.close()
            raise CopyFailed("provider_response")
        location = response.headers.get("location", "")
        response.close()
        url = urljoin(url, location)
    raise CopyFailed("too_many_redirects")


def _check_status(response: httpx.Response) -> None:
    if 200 <= response.status_code < 300:
        return
    reason = f"provider_http_{response.status_code}"
    raise CopyFailed(reason, final=response.status_code in GONE_STATUSES)


def _json(client: httpx.Client, url: str, headers: dict[str, str], *, payload: dict | None = None) -> dict:
    """A provider's media lookup: the JSON object it answers. Raises CopyFailed."""
    response = _get(client, url, {**headers, "Accept": "application/json"}, payload=payload)
    try:
        _check_status(response)
        body = b""
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > MAX_JSON_BYTES:
                raise CopyFailed("provider_response")
    except httpx.TimeoutException:
        raise CopyFailed("timeout") from None
    except httpx.HTTPError:
        raise CopyFailed("network") from None
    finally:
        response.close()
    try:
        answer = json.loads(body)
    except ValueError:
        raise CopyFailed("provider_response") from None
    if not isinstance(answer, dict):
        raise CopyFailed("provider_response")
    return answer


def _download(client: httpx.Client, url: str, headers: dict[str, str], sink) -> Fetched:
    """The file's bytes into `sink`, at most MAX_ATTACHMENT_BYTES of them, within the deadline."""
    response = _get(client, url, headers)
    try:
        _check_status(response)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_ATTACHMENT_BYTES:
            raise CopyFailed("too_large", final=True)
        size = 0
        started = time.monotonic()
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > MAX_ATTACHMENT_BYTES:
                raise CopyFailed("too_large", final=True)
            if time.monotonic() - started > DOWNLOAD_DEADLINE_SECONDS:
                raise CopyFailed("timeout")
            sink.write(chunk)
        return Fetched(size, clean_content_type(response.headers.get("content-type", "")))
    except httpx.TimeoutException:
        raise CopyFailed("timeout") from None
    except httpx.HTTPError:
        raise CopyFailed("network") from None
    finally:
        response.close()


# --- reading and erasing ----------------------------------------------------------------------------------------


def attachment_of(*, organization, conversation: Conversation, message_id, attachment_id) -> MessageAttachment:
    """The conversation's message's attachment (404 for anything else, another practice's included)."""
    attachment = (
        MessageAttachment.objects.for_org(organization)
        .filter(id=attachment_id, message_id=message_id, message__conversation=conversation)
        .first()
    )
    if attachment is None:
        raise NotFound("No such attachment.")
    return attachment


@dataclass(frozen=True)
class Download:
    handle: object  # an open binary file of the storage; the response closes it
    content_type: str
    filename: str
    size: int | None


def open_download(attachment: MessageAttachment) -> Download:
    """The stored file, opened. Pending is 409, unavailable 410; a file missing from storage 404, an unreachable
    store 503."""
    if attachment.state == MessageAttachment.State.PENDING:
        raise AttachmentNotReady()
    if attachment.state != MessageAttachment.State.STORED:
        raise AttachmentUnavailable()
    try:
        handle = media_storage().open(attachment.storage_name, "rb")
    except FileNotFoundError:
        logger.error("stored attachment %s is missing from storage", attachment.id)
        raise NotFound("The attachment's file is missing.") from None
    except Exception as exc:
        logger.warning("attachment storage read failed: %s", type(exc).__name__)
        raise AttachmentStorageUnavailable() from None
    content_type = clean_content_type(attachment.content_type) or "application/octet-stream"
    extension = mimetypes.guess_extension(content_type) or ""
    return Download(handle, content_type, f"attachment-{attachment.position + 1}{extension}", attachment.size)


def erase_files_of_patients(*, organization, patient_ids) -> None:
    """Erasure hook (runs inside the erasure's transaction, before the rows cascade away): the stored files of the
    patients' attachments are deleted once the erasure commits (a rollback keeps them with their rows). The rows
    are locked first, so a copy recording its outcome finishes first; a copy still downloading finds its row gone
    and deletes what it wrote (_attempt)."""
    rows = list(
        MessageAttachment.objects.for_org(organization)
        .select_for_update(of=("self",))
        .filter(message__conversation__patient_id__in=list(patient_ids))
        .order_by("id")
        .values_list("state", "storage_name")
    )
    names = [name for state, name in rows if state == MessageAttachment.State.STORED and name]
    if names:
        transaction.on_commit(lambda: _delete_files(names))


def _delete_files(names: list[str]) -> None:
    storage = media_storage()
    for name in names:
        try:
            storage.delete(name)
        except Exception as exc:  # a leftover file is harmless; what let go of it has committed
            logger.warning("could not delete stored attachment file: %s", type(exc).__name__)
