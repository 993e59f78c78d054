"""What the derived structures cost a single write: patient create and PATCH of a searched and filtered field,
in process through the services against the seeded benchmark database, with the triggers of the search postings
(migration 0011) and the list's facets (migration 0012) disabled, then enabled, alternately. Each write runs in a
transaction that is rolled back, so the seed stays as it is.

    make bench BENCH_ARGS="writes"                      # the seeded database of PATIENTS (default 100,000)
    make bench BENCH_ARGS="writes --iterations 60 --rounds 2"
"""

import argparse
import os
import statistics
import time

from bench import env
from bench.patients import seed

DERIVED_TRIGGERS = (
    ("patients_patient", "patients_patient_postings_insert"),
    ("patients_patient", "patients_patient_postings_update"),
    ("patients_patient", "patients_patient_postings_delete"),
    ("patients_patient", "patients_patient_facets_insert"),
    ("patients_patient", "patients_patient_facets_update"),
    ("patients_patient", "patients_patient_facets_delete"),
    ("patients_patienttag", "patients_patienttag_facets_insert"),
    ("patients_patienttag", "patients_patienttag_facets_update"),
    ("patients_patienttag", "patients_patienttag_facets_delete"),
)


def _set_triggers(url: str, enabled: bool) -> None:
    verb = "ENABLE" if enabled else "DISABLE"
    with env.connect(url) as conn:
        for table, trigger in DERIVED_TRIGGERS:
            conn.execute(f"ALTER TABLE {table} {verb} TRIGGER {trigger}")


def _timed(call, iterations: int) -> float:
    """p50 in ms of `call` run in a rolled-back transaction each time."""
    from django.db import transaction

    samples = []
    for n in range(iterations):
        started = time.perf_counter_ns()
        with transaction.atomic():
            call(n)
            transaction.set_rollback(True)
        samples.append(time.perf_counter_ns() - started)
    return statistics.median(samples) / 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench writes", description=__doc__)
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2, help="disabled/enabled pairs (default 2)")
    args = parser.parse_args(argv)
    url = env.database_url()
    info = seed.SeedInfo.load(url)
    if info is None:
        raise SystemExit("bench writes: seed the benchmark database first (make bench)")
    os.environ.update(env.server_env(url))
    import django

    django.setup()
    from apps.accounts.models import Organization
    from apps.patients import services
    from apps.patients.models import Patient

    organization = Organization.objects.get(pk=info.organization_id)
    patient = Patient.objects.for_org(organization).get(pk=info.patient_id(420))

    def create(n: int) -> None:
        data = {"first_name": "Benchmark", "last_name": f"Scrittura{n}", "email": f"bench.write{n}@example.com"}
        services.patient_create(organization=organization, user=None, data=data)

    def patch(n: int) -> None:
        target = Patient.objects.for_org(organization).get(pk=patient.pk)
        city = ("Torino", "Bologna")[n % 2]
        services.patient_update(organization=organization, user=None, patient=target, data={"city": city})

    print(f"{info.patients:,} patients; {args.iterations} writes each, p50 ms (rolled back)")
    print("| round | triggers | create | PATCH city |")
    print("|--:|---|--:|--:|")
    try:
        for round_ in range(1, args.rounds + 1):
            for enabled in (False, True):
                _set_triggers(url, enabled)
                figures = [_timed(create, args.iterations), _timed(patch, args.iterations)]
                label = "postings + facets on" if enabled else "off"
                print(f"| {round_} | {label} | {figures[0]:.1f} | {figures[1]:.1f} |", flush=True)
    finally:
        _set_triggers(url, True)
    return 0
