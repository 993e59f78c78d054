"""Make the benchmark database hold the requested data: create, migrate, seed (or reuse a matching seed)."""

from bench import env
from bench.patients import seed


def prepare(url: str, *, patients: int, others: int, other_patients: int, reseed: bool, skip_seed: bool, log):
    wanted = seed.SeedInfo(patients, others, other_patients, organization_id="", api_key="")
    if skip_seed:
        info = seed.SeedInfo.load(url)
        if info is None:
            raise SystemExit(f"bench: --skip-seed, but {seed.SeedInfo.path(url)} is missing: seed first")
        log(f"--skip-seed: using the seeded database as it is ({info.patients:,} patients in the big practice)")
        return info
    if not env.exists(url):
        log(f"creating database {env.database_name(url)}")
    elif not reseed and seed.is_seeded(url, wanted):
        info = seed.SeedInfo.load(url)
        log(f"database {env.database_name(url)} already holds this seed: reusing it (--reseed to rebuild)")
        env.migrate(url)
        return info
    else:
        log(f"rebuilding database {env.database_name(url)} (seed missing, different or --reseed)")
    log(f"migrated in {env.rebuild(url):.1f}s")
    log(
        f"seeding {patients:,} patients in the big practice and {others} practices of {other_patients:,} "
        f"({patients + others * other_patients:,} patients)"
    )
    return seed.seed(url, patients=patients, others=others, other_patients=other_patients, log=log)
