"""Make the benchmark database hold the requested data: create, migrate, seed (or reuse a matching seed)."""

import time

from bench import db, seed


def prepare(url: str, *, patients: int, others: int, other_patients: int, reseed: bool, skip_seed: bool, log):
    wanted = seed.SeedInfo(patients, others, other_patients, organization_id="", api_key="")
    if skip_seed:
        info = seed.SeedInfo.load(url)
        if info is None:
            raise SystemExit(f"bench: --skip-seed, but {seed.SeedInfo.path(url)} is missing: seed first")
        log(f"--skip-seed: using the seeded database as it is ({info.patients:,} patients in the big practice)")
        return info
    if not db.exists(url):
        log(f"creating database {db.database_name(url)}")
        db.create(url)
    elif not reseed and seed.is_seeded(url, wanted):
        info = seed.SeedInfo.load(url)
        log(f"database {db.database_name(url)} already holds this seed: reusing it (--reseed to rebuild)")
        db.migrate(url)
        return info
    else:
        log(f"rebuilding database {db.database_name(url)} (seed missing, different or --reseed)")
        db.drop(url)
        db.create(url)
    t0 = time.monotonic()
    db.migrate(url)
    log(f"migrated in {time.monotonic() - t0:.1f}s")
    log(
        f"seeding {patients:,} patients in the big practice and {others} practices of {other_patients:,} "
        f"({patients + others * other_patients:,} patients)"
    )
    return seed.seed(url, patients=patients, others=others, other_patients=other_patients, log=log)
