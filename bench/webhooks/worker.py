"""One Celery worker process of the benchmark: `celery -A config worker …` with the benchmark settings.

    python -m bench.webhooks.worker NAME

runs `worker --pool solo --concurrency 1` (one process, one task at a time) on the benchmark broker. The app code
runs unchanged. Only for a "what-if" run (--what-if on the benchmark, env BENCH_WEBHOOKS_WHATIF) is a proposed fix
applied in this process before the worker starts, so that its effect can be measured without editing apps/. A fix
is a name in KNOWN and a branch in apply_what_if that patches the app in this process and returns its undo.

None is pending. Applied so far (now in the app, so no longer what-ifs): ssl_context (one TLS context per process,
sender._SSL_CONTEXT, commit fecede7) and lean_finish (a success is one UPDATE of the delivery's changed columns and
the endpoint's streak is reset only when not known to be 0, delivery._finish, issue 4).
"""

import os
import sys

KNOWN: tuple[str, ...] = ()


def apply_what_if(names: list[str]):
    """Apply the named proposed fixes in this process; returns a function that undoes them."""
    undo = []
    for name in names:
        if name:
            raise SystemExit(f"bench.webhooks.worker: unknown what-if {name!r} (known: {', '.join(KNOWN) or 'none'})")
    return lambda: [step() for step in reversed(undo)]


def what_if_names(spec: str) -> list[str]:
    return [n.strip() for n in spec.replace("+", ",").split(",") if n.strip()]


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "bench"
    import django

    django.setup()
    apply_what_if(what_if_names(os.environ.get("BENCH_WEBHOOKS_WHATIF", "")))
    from bench.env import worker_arguments
    from config.celery import app

    app.worker_main(worker_arguments(name, pool="solo", concurrency=1))


if __name__ == "__main__":
    main()
