"""Play the payment platform locally: post a correctly signed connect event to the running server, exactly as the
platform would, so a developer sees a sandbox deposit paid or refunded.

    python manage.py simulate_payment <deposit request id>                 # checkout.session.completed (paid)
    python manage.py simulate_payment <deposit request id> --refund 2000   # charge.refunded, cumulative 20.00

Signed with this deployment's SVC_PAYMENTS_WEBHOOK_SECRET (a fixed local value under `make run`). The practice must
have a connected account (in the sandbox: POST /settings/payments/connect and open the URL it answers)."""

import json
import secrets
import time

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.deposits.models import DepositRequest, PaymentAccount
from apps.deposits.signatures import header


class Command(BaseCommand):
    help = "Post a signed payment-platform event (paid, or refunded with --refund) for a deposit request."

    def add_arguments(self, parser):
        parser.add_argument("deposit_id")
        parser.add_argument("--refund", type=int, default=None, help="cumulative refunded amount (minor units)")
        parser.add_argument("--url", default=None, help="the server's base URL (default SVC_BASE_URL)")

    def handle(self, *args, deposit_id, refund, url, **options):
        deposit = DepositRequest.objects.unscoped().filter(id=deposit_id).first()
        if deposit is None:
            raise CommandError("No such deposit request.")
        account = PaymentAccount.objects.for_org(deposit.organization_id).first()
        if account is None:
            raise CommandError("The practice has no connected payment account.")
        payment_intent = deposit.payment_intent_id or f"pi_sandbox_{secrets.token_hex(8)}"
        metadata = {"deposit_request_id": str(deposit.id), "organization_id": str(deposit.organization_id)}
        if refund is None:
            kind = "checkout.session.completed"
            obj = {
                "id": deposit.checkout_session_id or f"cs_sandbox_{secrets.token_hex(8)}",
                "object": "checkout.session",
                "payment_status": "paid",
                "amount_total": deposit.amount,
                "currency": deposit.currency,
                "payment_intent": payment_intent,
                "metadata": metadata,
            }
        else:
            kind = "charge.refunded"
            obj = {
                "id": f"ch_sandbox_{secrets.token_hex(8)}",
                "object": "charge",
                "paid": True,
                "amount": deposit.amount,
                "amount_refunded": refund,
                "currency": deposit.currency,
                "payment_intent": payment_intent,
                "metadata": metadata,
            }
        event = {
            "id": f"evt_sandbox_{secrets.token_hex(12)}",
            "object": "event",
            "type": kind,
            "account": account.account_id,
            "created": int(time.time()),
            "data": {"object": obj},
        }
        body = json.dumps(event).encode()
        target = f"{(url or settings.SVC_BASE_URL).rstrip('/')}/webhooks/payments-connect"
        headers = {
            "Content-Type": "application/json",
            "Stripe-Signature": header(settings.SVC_PAYMENTS_WEBHOOK_SECRET, body),
        }
        response = httpx.post(target, content=body, headers=headers, timeout=10)
        self.stdout.write(f"{kind} → {response.status_code} {response.text}")
