"""The chat widget: a practice's widget connections (the embed key a website pastes, the origins allowed to use it,
greeting and office hours) and their visitors (a browser that started a chat, known by a visitor token the page
keeps). A visitor's thread is a conversation of the inbox on the widget's channel connection (kind "widget")."""

from django.db import models

from apps.core.models import TenantModel


class WidgetConnection(TenantModel):
    name = models.CharField(max_length=120)
    embed_key = models.CharField(max_length=64, unique=True)  # public: it is in the practice's page source
    allowed_origins = models.JSONField(default=list)  # ["https://www.smiles.example"]: scheme://host[:port]
    greeting = models.CharField(max_length=500, blank=True, default="")
    away_message = models.CharField(max_length=500, blank=True, default="")
    # {"mon": [["09:00", "17:00"]], …} in the practice's timezone; a day not named is closed.
    office_hours = models.JSONField(default=dict)
    active = models.BooleanField(default=True)
    channel = models.OneToOneField("conversations.ChannelConnection", on_delete=models.PROTECT, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["organization", "created_at"], name="widget_conn_org_idx")]

    def __str__(self) -> str:
        return self.name


class Visitor(TenantModel):
    """One browser's identity on one widget. The token is shown once (to the page) and kept as its SHA-256."""

    widget = models.ForeignKey(WidgetConnection, on_delete=models.CASCADE, related_name="visitors")
    token_hash = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=200, blank=True, default="")
    email = models.CharField(max_length=254, blank=True, default="")
    phone = models.CharField(max_length=40, blank=True, default="")
    # The patient the thread is filed under: matched by e-mail or phone, or an enquiry made for this visitor.
    patient = models.ForeignKey("patients.Patient", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    made_patient = models.BooleanField(default=False)  # the patient is the enquiry made for this visitor
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "widget", "created_at"], name="widget_visitor_widget_idx"),
            models.Index(fields=["organization", "patient"], name="widget_visitor_patient_idx"),
        ]


class ReceivedMessage(TenantModel):
    """A visitor's message from the socket, kept durably and acknowledged with the id its inbox message will have;
    a task builds the inbox rows (conversation, message, events, timeline) from it and deletes it. A retry of the
    same client message id finds this row, or the stored message, and answers the same id."""

    widget = models.ForeignKey(WidgetConnection, on_delete=models.CASCADE, related_name="+")
    visitor = models.ForeignKey(Visitor, on_delete=models.CASCADE, related_name="+")
    client_message_id = models.CharField(max_length=64)
    message_id = models.UUIDField()  # the inbox message's id, given in the ack
    body = models.TextField()
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "visitor", "client_message_id"], name="widget_received_client_id_uniq"
            )
        ]
        indexes = [models.Index(fields=["organization", "created_at"], name="widget_received_org_idx")]
