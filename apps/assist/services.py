"""AI assist: suggest a reply to a conversation, or summarize it, from its latest messages. Nothing is stored and
nothing is sent: the member reads the text and decides (a suggested reply goes out only if they send it).

What the provider sees: the channel and the latest message texts (MAX_MESSAGES, each cut to MAX_MESSAGE_CHARS),
marked "Patient" or "Practice"; no names, numbers or addresses from the records, no attachments, no marketing
messages.
"""

from dataclasses import dataclass

from apps.assist import provider
from apps.assist.errors import NothingToRead
from apps.conversations.public import Message, Purpose, messages_of

MAX_MESSAGES = 30
MAX_MESSAGE_CHARS = 2000
MAX_INSTRUCTIONS = 500

SUGGEST_SYSTEM = (
    "You help the front desk of a dental practice answer patients. Write one reply the practice could send next in "
    "this conversation, in the patient's language, short, warm and professional, fit for the channel. Do not "
    "invent appointment times, prices or clinical facts: where they are needed, leave a clear placeholder in square "
    "brackets. Give no diagnosis or medical advice. Answer with the reply text only."
)
SUMMARIZE_SYSTEM = (
    "You help the staff of a dental practice. Summarize this conversation with a patient for a colleague taking "
    "it over: what the patient wants, what was answered or agreed, and what is still open, in at most five short "
    "bullet points, in the language the staff wrote in (the patient's if the practice has not written). State "
    "only what the messages say."
)
CHANNEL_NAMES = {"sms": "SMS", "email": "e-mail", "messaging_app": "messaging app", "telephony_messaging": "text"}


@dataclass(frozen=True)
class AssistResult:
    text: str
    messages_read: int


def _transcript(organization, conversation) -> tuple[str, int]:
    rows = list(
        messages_of(organization=organization, conversation=conversation)
        .exclude(purpose=Purpose.MARKETING)
        .exclude(body="", subject="")
        .order_by("-occurred_at", "-id")
        .values("direction", "subject", "body")[:MAX_MESSAGES]
    )
    if not rows:
        raise NothingToRead()
    lines = []
    for row in reversed(rows):
        who = "Patient" if row["direction"] == Message.Direction.INBOUND else "Practice"
        text = " ".join(part for part in (row["subject"], row["body"]) if part).strip()
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[:MAX_MESSAGE_CHARS] + " […]"
        lines.append(f"{who}: {text}")
    channel = CHANNEL_NAMES.get(conversation.channel, "message")
    return f"Channel: {channel}\n\n" + "\n\n".join(lines), len(rows)


def suggest_reply(*, organization, conversation, instructions: str = "") -> AssistResult:
    config = provider.require_configuration()
    transcript, count = _transcript(organization, conversation)
    prompt = transcript
    if instructions.strip():
        prompt += f"\n\nThe staff member asks for this reply: {instructions.strip()[:MAX_INSTRUCTIONS]}"
    text = provider.complete(
        config, [{"role": "system", "content": SUGGEST_SYSTEM}, {"role": "user", "content": prompt}], max_tokens=400
    )
    return AssistResult(text=text, messages_read=count)


def summarize(*, organization, conversation) -> AssistResult:
    config = provider.require_configuration()
    transcript, count = _transcript(organization, conversation)
    text = provider.complete(
        config,
        [{"role": "system", "content": SUMMARIZE_SYSTEM}, {"role": "user", "content": transcript}],
        max_tokens=300,
    )
    return AssistResult(text=text, messages_read=count)
