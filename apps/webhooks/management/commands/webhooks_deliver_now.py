import json

from django.core.management.base import BaseCommand

from apps.webhooks import delivery


class Command(BaseCommand):
    help = "Run one webhook sweep in the foreground: fan out new events, then drain every endpoint with due work."

    def handle(self, *args, **options):
        fanned = 0
        while True:
            processed, _ = delivery.fan_out()
            fanned += processed
            if not processed:
                break
        sent = {}
        for endpoint_id in delivery.due_endpoint_ids():
            sent[str(endpoint_id)] = delivery.drain_endpoint(endpoint_id).sent
        self.stdout.write(json.dumps({"eventsFannedOut": fanned, "deliveriesSent": sent}))
