"""The historical import's driver: patients, then appointments, page by page through the provider adapter.

Each page is fetched outside any transaction, then applied in one transaction that first locks the import row and
checks that its cursor is still the one the page was fetched at (a second runner — a start pressed twice, a
redelivered task, the sweep — finds it moved and stops), applies the page set-based (apps.pms.sync, live=False:
no event per record), and saves the next cursor and the counts. A crash loses at most the page in flight; the run
resumes from the saved cursor. A page that fails (network, timeout, 5xx, an unreadable page) stops the run as
failed, with the error, and the connection degraded; refused credentials make it failing. When the appointments
are done the import completes and the connection turns active (and healthy)."""

import logging

from django.db import transaction
from django.utils import timezone

from apps.core.crypto import decrypt
from apps.pms import provider, services, sync
from apps.pms.models import ConnectionStatus, Health, ImportPhase, ImportState, PmsConnection, PmsImport

logger = logging.getLogger("apps.pms")

MAX_ERRORS = 50
STALE_SECONDS = 120
KIND_OF_PHASE = {ImportPhase.PATIENTS: "patient", ImportPhase.APPOINTMENTS: "appointment"}
COUNTERS = {
    "patient": {
        "created": "patients_created",
        "matched": "patients_matched",
        "updated": "patients_updated",
        "unchanged": "patients_unchanged",
    },
    "appointment": {
        "created": "appointments_created",
        "updated": "appointments_updated",
        "unchanged": "appointments_unchanged",
        "practitioners_created": "practitioners_created",
    },
}


def _errors(run: PmsImport, phase: str, found: list[tuple[str, str]]) -> None:
    at = timezone.now().isoformat()
    entries = [{"at": at, "phase": phase, "code": code, "item_id": item_id} for code, item_id in found]
    run.errors = (list(run.errors) + entries)[-MAX_ERRORS:]


def run_import(import_id, *, client_factory=None, page_size: int = provider.PAGE_SIZE, max_pages: int | None = None):
    """Run (or resume) one import until it completes, fails or is taken over. Returns its state."""
    pages = 0
    while True:
        run = PmsImport.unscoped_objects.select_related("connection").filter(id=import_id).first()
        if run is None or run.state != ImportState.RUNNING:
            return run.state if run else None
        connection = run.connection
        if connection.status == ConnectionStatus.DISCONNECTED or not connection.api_key_encrypted:
            _fail(run, "connection_disconnected", health=None)
            return ImportState.FAILED
        if max_pages is not None and pages >= max_pages:
            return run.state
        phase, cursor = run.phase, run.cursor
        kind = KIND_OF_PHASE[phase]
        factory = client_factory or provider.Client
        try:
            with factory(connection.base_url, decrypt(connection.api_key_encrypted)) as client:
                page = client.page(kind, cursor, limit=page_size)
        except provider.ProviderRefused as refused:
            _fail(run, refused.code, health=Health.FAILING)
            return ImportState.FAILED
        except provider.ProviderUnavailable as unavailable:
            _fail(run, unavailable.code, health=Health.DEGRADED)
            return ImportState.FAILED
        if not _apply_page(run.id, connection, phase, cursor, kind, page):
            return None  # another runner moved it on
        pages += 1


def _apply_page(import_id, connection: PmsConnection, phase: str, cursor: str, kind: str, page) -> bool:
    with transaction.atomic():
        run = (
            PmsImport.objects.for_org(connection.organization_id)
            .select_for_update()
            .filter(id=import_id, state=ImportState.RUNNING, phase=phase, cursor=cursor)
            .first()
        )
        if run is None:
            return False
        items, bad = [], []
        for raw in page.items:
            try:
                items.append(provider.normalize(kind, raw))
            except provider.BadItem as problem:
                raw_id = raw.get("id") if isinstance(raw, dict) else None
                bad.append((problem.code, str(raw_id)[:128] if raw_id is not None else ""))
        outcome = sync.apply(connection, kind, items, live=False)
        for name, column in COUNTERS[kind].items():
            setattr(run, column, getattr(run, column) + outcome.counts[name])
        run.skipped += outcome.counts["skipped"] + len(bad)
        if bad or outcome.errors:
            _errors(run, phase, bad + outcome.errors)
        run.pages += 1
        if page.next_cursor:
            run.cursor = page.next_cursor
        else:
            run.cursor = ""
            run.phase = ImportPhase.APPOINTMENTS if phase == ImportPhase.PATIENTS else ImportPhase.DONE
        if run.phase == ImportPhase.DONE:
            run.state, run.finished_at = ImportState.COMPLETED, timezone.now()
            _activate(connection)
        run.save()
    return True


def _activate(connection: PmsConnection) -> None:
    current = PmsConnection.objects.for_org(connection.organization_id).select_for_update().get(id=connection.id)
    if current.status == ConnectionStatus.IMPORTING:
        current.status, current.activated_at = ConnectionStatus.ACTIVE, timezone.now()
        current.save(update_fields=["status", "activated_at", "updated_at"])
    services.health_set(connection=current, health=Health.HEALTHY)


def _fail(run: PmsImport, code: str, *, health: str | None) -> None:
    logger.warning("PMS import %s stopped: %s", run.id, code)
    with transaction.atomic():
        locked = (
            PmsImport.objects.for_org(run.organization_id)
            .select_for_update()
            .filter(id=run.id, state=ImportState.RUNNING)
            .first()
        )
        if locked is None:
            return
        locked.state = ImportState.FAILED
        locked.failures += 1
        _errors(locked, locked.phase, [(code, "")])
        locked.save()
        if health is not None:
            connection = PmsConnection.objects.for_org(run.organization_id).get(id=run.connection_id)
            services.health_set(connection=connection, health=health, reason=code)


def sweep_stale() -> int:
    """Running imports nobody has moved on for two minutes (a worker that died): asked to run again."""
    from apps.pms.tasks import run_import as task

    cutoff = timezone.now() - timezone.timedelta(seconds=STALE_SECONDS)
    stale = list(
        PmsImport.unscoped_objects.filter(state=ImportState.RUNNING, updated_at__lt=cutoff).values_list("id", flat=True)
    )
    for import_id in stale:
        PmsImport.unscoped_objects.filter(id=import_id).update(updated_at=timezone.now())
        task.delay(str(import_id))
    return len(stale)
