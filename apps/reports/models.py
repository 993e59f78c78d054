"""Report subscriptions: a member receives one report by e-mail daily, weekly or monthly."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.core.models import TenantModel


class Frequency(models.TextChoices):
    DAILY = "daily"  # every day at send_time: the day before
    WEEKLY = "weekly"  # on weekday at send_time: the seven days before
    MONTHLY = "monthly"  # on month_day at send_time: the calendar month before


class ReportSubscription(TenantModel):
    """One member's e-mailed report. `next_due_at` is the next sending moment (UTC; reckoned in the practice's
    zone); the beat sweep sends the ones due. `last_period_end` is the last period sent: a retried sweep never
    sends the same period twice."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    report_key = models.CharField(max_length=32)
    filters = models.JSONField(default=dict, blank=True)  # the report's filters, wire names, normalized
    frequency = models.CharField(max_length=8, choices=Frequency.choices)
    send_time = models.TimeField()  # practice time
    weekday = models.PositiveSmallIntegerField(null=True, blank=True)  # weekly: 0 Monday … 6 Sunday
    month_day = models.PositiveSmallIntegerField(null=True, blank=True)  # monthly: 1 … 28
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=32, blank=True, default="")  # MEMBER_LEFT, NO_ACCESS
    next_due_at = models.DateTimeField(null=True, blank=True)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    last_period_end = models.DateField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "user", "created_at"], name="reports_sub_member_idx"),
            # The beat sweep's work across practices: enabled subscriptions by when they are due.
            models.Index(fields=["next_due_at"], condition=Q(enabled=True), name="reports_sub_due_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(weekday__isnull=True) | Q(weekday__gte=0, weekday__lte=6), name="reports_sub_weekday"
            ),
            models.CheckConstraint(
                condition=Q(month_day__isnull=True) | Q(month_day__gte=1, month_day__lte=28),
                name="reports_sub_month_day",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.report_key} {self.frequency} for {self.user_id}"
