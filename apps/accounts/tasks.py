import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.contrib.sessions.models import Session
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.utils import timezone

from apps.accounts.services import sessions as user_sessions

logger = logging.getLogger("apps.accounts")


@shared_task(name="apps.accounts.tasks.purge_expired_sessions")
def purge_expired_sessions() -> int:
    """Hourly (beat): drop expired browser sessions and their /user/sessions records. Idempotent."""
    deleted, _ = Session.objects.filter(expire_date__lt=timezone.now()).delete()
    return deleted + user_sessions.purge_expired()


# A delivery still pending or publishing this long after its last change was lost (worker gone past the task
# time limit, broker down at commit): apps.partners sends it again as the same e-mail.
DELIVERY_STALE_AFTER = timedelta(minutes=10)


@shared_task(name="apps.accounts.tasks.send_invitation_email", bind=True, max_retries=5)
def send_invitation_email(self, invitation_id: str) -> bool:
    """E-mail an invitation link (Django's e-mail backend; console in development) and drive its delivery state:
    pending → publishing (claimed by a conditional update) → published, or parked once the retries are exhausted.

    Idempotent: an answered, withdrawn or expired invitation, or one already published or parked, is not mailed.
    A redelivered task finds its invitation still publishing and sends it again (at least once, never after
    published)."""
    from apps.accounts.models import Invitation

    Delivery = Invitation.Delivery
    now = timezone.now()
    claimed = (
        Invitation.objects.unscoped()
        .filter(
            pk=invitation_id,
            status=Invitation.Status.PENDING,
            expires_at__gt=now,
            delivery__in=[Delivery.PENDING, Delivery.PUBLISHING],
        )
        .update(delivery=Delivery.PUBLISHING, updated_at=now)
    )
    if not claimed:
        return False
    invitation = Invitation.objects.unscoped().select_related("organization", "inviter").get(pk=invitation_id)
    inviter = (invitation.inviter.name or invitation.inviter.email) if invitation.inviter else "A colleague"
    practice = invitation.organization.name
    link = f"{settings.SVC_APP_URL}/accept-invitation?id={invitation.id}"
    context = {
        "inviter": inviter,
        "practice": practice,
        "role": invitation.get_role_display(),
        "link": link,
        "expires_at": f"{invitation.expires_at:%Y-%m-%d %H:%M} UTC",
    }
    message = _templated("invitation", f"{inviter} invited you to {practice}", context, invitation.email)
    try:
        message.send()
    except OSError as exc:  # smtplib.SMTPException and socket errors
        if self.request.called_directly or self.request.retries >= self.max_retries:
            Invitation.objects.unscoped().filter(pk=invitation_id, delivery=Delivery.PUBLISHING).update(
                delivery=Delivery.PARKED, updated_at=timezone.now()
            )
            logger.warning("invitation e-mail %s parked after %s attempts", invitation_id, self.request.retries + 1)
            return False
        raise self.retry(exc=exc, countdown=min(600, 2 ** (self.request.retries + 1))) from exc
    sent_at = timezone.now()
    Invitation.objects.unscoped().filter(pk=invitation_id, delivery=Delivery.PUBLISHING).update(
        delivery=Delivery.PUBLISHED, last_sent_at=sent_at, updated_at=sent_at
    )
    return True


@shared_task(name="apps.accounts.tasks.send_password_reset_email", bind=True, max_retries=5)
def send_password_reset_email(self, user_id: str) -> bool:
    """E-mail a password reset link (text and HTML; Django's e-mail backend: SMTP in production, the console under
    `make run`). The token is made here, at sending time, so it never sits in the broker. Retried with backoff when
    the mail server does not answer."""
    from apps.accounts.models import User
    from apps.accounts.services.password_reset import reset_token

    user = User.objects.filter(pk=user_id, is_active=True).first()
    if user is None:
        return False
    context = {
        "name": user.name or user.email,
        "link": f"{settings.SVC_APP_URL}/reset-password?token={reset_token(user)}",
        "minutes": settings.PASSWORD_RESET_TIMEOUT // 60,
    }
    return _send_templated(self, "password_reset", "Reset your Practice CRM password", context, user.email)


@shared_task(name="apps.accounts.tasks.send_verification_email", bind=True, max_retries=5)
def send_verification_email(self, user_id: str, address: str) -> bool:
    """E-mail a link that verifies `address` for the person (their own, or the one they asked to change to); the
    token is signed here, at sending time. Retried with backoff when the mail server does not answer."""
    from apps.accounts.models import User
    from apps.accounts.services.email_verification import MAX_AGE_SECONDS, verification_token

    user = User.objects.filter(pk=user_id, is_active=True).first()
    if user is None:
        return False
    context = {
        "name": user.name or user.email,
        "address": address,
        "changing": address != user.email,
        "link": f"{settings.SVC_APP_URL}/verify-email?token={verification_token(user, address)}",
        "hours": MAX_AGE_SECONDS // 3600,
    }
    return _send_templated(self, "verify_email", "Confirm your e-mail address for Practice CRM", context, address)


def _templated(template: str, subject: str, context: dict, address: str) -> EmailMultiAlternatives:
    """Text and HTML from templates/emails/<template>.{txt,html}, for Django's e-mail backend."""
    message = EmailMultiAlternatives(
        subject=subject,
        body=render_to_string(f"emails/{template}.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[address],
    )
    message.attach_alternative(render_to_string(f"emails/{template}.html", context), "text/html")
    return message


def _send_templated(task, template: str, subject: str, context: dict, address: str) -> bool:
    """Send a templated e-mail; a mail server that does not answer is retried with backoff (the task's
    max_retries), then given up with a log line."""
    message = _templated(template, subject, context, address)
    try:
        message.send()
    except OSError as exc:  # smtplib.SMTPException and socket errors
        if task.request.called_directly or task.request.retries >= task.max_retries:
            logger.warning("%s e-mail not sent after %s attempts", template, task.request.retries + 1)
            return False
        raise task.retry(exc=exc, countdown=min(600, 2 ** (task.request.retries + 1))) from exc
    return True
