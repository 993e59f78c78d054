"""Fixtures of the automations tests: rules made through the routes, the default pipeline's stages, a patient, and
`queued`, which records what the commit listener queues (the tests then call the task function themselves)."""

import json

import pytest

from apps.automations import tasks
from apps.automations.models import AutomationRun
from tests.factories import PatientFactory, TagFactory

JSON = "application/json"


def post(client, path: str, data=None):
    return client.post(path, json.dumps({} if data is None else data), content_type=JSON)


def patch(client, path: str, data):
    return client.patch(path, json.dumps(data), content_type=JSON)


def make_rule(api, **body) -> dict:
    data = {
        "name": "Call new leads",
        "trigger": {"type": "event", "eventType": "patient.created"},
        "actions": [{"type": "create_task", "params": {"title": "Call the lead", "dueInMinutes": 5}}],
    }
    data.update(body)
    response = post(api, "/automations", data)
    assert response.status_code == 201, response.content
    return response.json()


def runs_of(organization, **filters):
    return list(AutomationRun.objects.for_org(organization).filter(**filters).order_by("created_at", "id"))


class Queue:
    def __init__(self):
        self.calls: list[tuple[list[str], list[str]]] = []

    def take(self) -> list[tuple[list[str], list[str]]]:
        calls, self.calls = self.calls, []
        return calls

    def run_all(self) -> int:
        """Call the task function for everything queued so far (and for what those runs queue in turn)."""
        done = 0
        while self.calls:
            for event_ids, chain in self.take():
                done += tasks.evaluate_events(event_ids, chain)
        return done


@pytest.fixture
def queued(monkeypatch) -> Queue:
    queue = Queue()
    monkeypatch.setattr(tasks.evaluate_events, "delay", lambda ids, chain: queue.calls.append((ids, chain)))
    return queue


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """committed(fn, *args, **kwargs): call fn, then run the on-commit callbacks (the commit listeners)."""

    def run(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return run


@pytest.fixture
def stages(api) -> dict:
    """The owner's default pipeline's stage ids by name."""
    pipeline = api.get("/pipelines").json()["items"][0]
    return {s["name"]: s["id"] for s in pipeline["stages"]}


@pytest.fixture
def patient(owner):
    return PatientFactory(organization=owner.organization)


@pytest.fixture
def tag(owner):
    return TagFactory(organization=owner.organization)


def open_journey(api, patient, **body) -> dict:
    response = post(api, "/journeys", {"patientId": str(patient.id), **body})
    assert response.status_code == 201, response.content
    return response.json()
