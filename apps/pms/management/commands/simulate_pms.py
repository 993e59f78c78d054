"""Post correctly signed PMS callbacks to a running server, as the PMS would (docs/pms.md):

    manage.py simulate_pms --url http://localhost:8787/webhooks/pms/pmsconnect/<token> --secret pmswhsec_… \\
        [--scenario all|patient|appointment|replay|conflict|oversized] [--item-id P900001]

patient: a new PMS patient at revision 1; appointment: an appointment of that patient; replay: the same patient body
again under the same delivery id (a duplicate) and under a new one (unchanged: nothing recorded); conflict: other
content at the same revision (held for review); oversized: 101 events in one body (settled terminally, rejected).
Each answer is printed."""

import json
import time
import uuid

import httpx
from django.core.management.base import BaseCommand, CommandError

from apps.pms.provider import signed_headers

SCENARIOS = ("patient", "appointment", "replay", "conflict", "oversized")


def _patient(item_id: str, *, revision: int = 1, last_name: str = "Simulated") -> dict:
    return {
        "kind": "patient",
        "id": item_id,
        "revision": revision,
        "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "data": {
            "firstName": "Sam",
            "lastName": last_name,
            "email": f"{item_id.lower()}@simulated.example",
            "phone": "+44 7700 900999",
            "dateOfBirth": "1985-04-12",
        },
    }


def _appointment(item_id: str, patient_id: str) -> dict:
    start = time.strftime("%Y-%m-%dT%H:00:00+00:00", time.gmtime(time.time() + 86400 * 7))
    end = time.strftime("%Y-%m-%dT%H:30:00+00:00", time.gmtime(time.time() + 86400 * 7))
    return {
        "kind": "appointment",
        "id": item_id,
        "revision": 1,
        "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "data": {
            "patientId": patient_id,
            "practitionerId": "SIM-D1",
            "practitionerName": "Dr Simulated",
            "startsAt": start,
            "endsAt": end,
            "status": "booked",
        },
    }


class Command(BaseCommand):
    help = "Post signed PMS callbacks (patient, appointment, replay, conflict, oversized) to a running server."

    def add_arguments(self, parser):
        parser.add_argument("--url", required=True, help="The connection's callbackUrl.")
        parser.add_argument("--secret", required=True, help="The connection's signing secret.")
        parser.add_argument("--scenario", choices=("all", *SCENARIOS), default="all")
        parser.add_argument("--item-id", default="", help="The PMS patient id to use (default: a new one).")

    def handle(self, *args, **options):
        url, secret = options["url"], options["secret"]
        patient_id = options["item_id"] or f"SIM{uuid.uuid4().hex[:8].upper()}"
        chosen = SCENARIOS if options["scenario"] == "all" else (options["scenario"],)

        def post(name: str, events: list[dict], delivery_id: str | None = None) -> None:
            raw = json.dumps({"events": events}).encode()
            headers = signed_headers(secret, raw, delivery_id=delivery_id or str(uuid.uuid4()))
            try:
                response = httpx.post(url, content=raw, headers=headers, timeout=10.0)
            except httpx.HTTPError as error:
                raise CommandError(f"{name}: {url} did not answer ({type(error).__name__})") from None
            self.stdout.write(f"{name}: {response.status_code} {response.text}")

        for scenario in chosen:
            if scenario == "patient":
                post("patient", [_patient(patient_id)])
            elif scenario == "appointment":
                post("appointment", [_appointment(f"{patient_id}-A1", patient_id)])
            elif scenario == "replay":
                delivery = str(uuid.uuid4())
                post("replay (first)", [_patient(patient_id)], delivery)
                post("replay (same delivery id)", [_patient(patient_id)], delivery)
                post("replay (new delivery id, same revision)", [_patient(patient_id)])
            elif scenario == "conflict":
                post("conflict (other content, same revision)", [_patient(patient_id, last_name="Conflicting")])
            elif scenario == "oversized":
                post("oversized (101 events)", [_patient(f"{patient_id}-{n}") for n in range(101)])
