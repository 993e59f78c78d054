"""The dialer's interface to other apps: import from here, never from its other modules or its api/.

For AI Voice (transcripts and summaries on top of calls): the Call model and its statuses and directions, the
Recording model, `call_recording(call, kind=None)` (the call's newest recording, of a kind when given) and
`open_recording(recording)` (the stored file opened for reading: a Download with `.handle`, `.content_type`,
`.size`; NotFound / RECORDING_NOT_READY / RECORDING_UNAVAILABLE otherwise). Whatever another area keeps about a call
must point at Call with on_delete=CASCADE: a patient's erasure deletes their calls, and that must take their
transcripts and summaries along.
"""

from django.db.models import Exists

from apps.dialer.models import (
    Call,
    CallStatus,
    ConnectionStatus,
    DialerConnection,
    Direction,
    Recording,
    RecordingKind,
    RecordingState,
)
from apps.dialer.recordings import open_download as open_recording
from apps.dialer.selectors import call_recording


def dialer_connected(organization) -> Exists:
    """As an expression (GET /bootstrap): the practice has an active telephony (dialer) connection."""
    return Exists(DialerConnection.objects.for_org(organization).filter(status=ConnectionStatus.ACTIVE))


__all__ = [
    "Call",
    "CallStatus",
    "Direction",
    "Recording",
    "RecordingKind",
    "RecordingState",
    "call_recording",
    "dialer_connected",
    "open_recording",
]
