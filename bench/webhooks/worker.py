"""One Celery worker process of the benchmark: `celery -A config worker …` with the benchmark settings.

    python -m bench.webhooks.worker NAME

runs `worker --pool solo --concurrency 1` (one process, one task at a time) on the benchmark broker. The app code
runs unchanged. Only for a "what-if" run (--what-if on the benchmark, env BENCH_WEBHOOKS_WHATIF) is a proposed fix
applied in this process before the worker starts, so that its effect can be measured without editing apps/:

- ssl_context: apps.webhooks.sender.post builds one httpx.Client per delivery (needed: the URL is pinned to the
  vetted address and keep-alive is off), and each httpx.Client builds a fresh SSLContext loading the whole certifi
  CA bundle, even for the plain-http loopback receiver. The fix builds the SSLContext once per process and passes
  it as verify=; every request still gets its own client, connection, DNS check and pinned address.
- lean_finish: a successful delivery is recorded with one UPDATE of its changed columns (not delivery.save() of
  every column, body included, plus an UPDATE of the endpoint's consecutive_failures to 0 in a transaction of its
  own); the endpoint's streak is reset only when it is not 0.

Combine them with "+" (ssl_context+lean_finish).
"""

import functools
import os
import sys
import types

KNOWN = ("ssl_context", "lean_finish")


def apply_what_if(names: list[str]):
    """Apply the named proposed fixes in this process; returns a function that undoes them."""
    undo = []
    for name in names:
        if name == "ssl_context":
            import httpx

            from apps.webhooks import sender

            context = httpx.create_ssl_context()  # what httpx.Client() builds by default (certifi, verify on)
            shim = types.ModuleType("httpx_shared_ssl_context")
            shim.__dict__.update({k: v for k, v in vars(httpx).items() if not k.startswith("__")})
            shim.Client = functools.partial(httpx.Client, verify=context)
            undo.append(functools.partial(setattr, sender, "httpx", sender.httpx))
            sender.httpx = shim
        elif name == "lean_finish":
            from apps.webhooks import delivery as engine

            undo.append(functools.partial(setattr, engine, "_finish", engine._finish))
            engine._finish = _lean_finish(engine._finish)
        elif name:
            raise SystemExit(f"bench.webhooks.worker: unknown what-if {name!r}")
    return lambda: [step() for step in reversed(undo)]


def _lean_finish(original):
    """A success writes only the delivery's changed columns, in one autocommit UPDATE, and resets the endpoint's
    failure streak only when it is not already 0 (the lease holder is the only writer of the streak while it drains;
    the value read with the lease is kept up to date in memory). Everything else goes to the original _finish."""
    from apps.webhooks.models import WebhookDelivery, WebhookEndpoint

    def lean_finish(endpoint, delivery, status, *, now, error=None):
        if status != WebhookDelivery.Status.DELIVERED or delivery.kind == WebhookDelivery.Kind.TEST or error:
            endpoint.consecutive_failures = None  # unknown from here on: the next success resets it
            return original(endpoint, delivery, status, now=now, error=error)
        delivery.status, delivery.completed_at, delivery.lease_expires_at = status, now, None
        WebhookDelivery.objects.unscoped().filter(id=delivery.id).update(
            status=status,
            completed_at=now,
            lease_expires_at=None,
            attempts=delivery.attempts,
            response_status=delivery.response_status,
            response_snippet=delivery.response_snippet,
            last_error=delivery.last_error,
            updated_at=now,
        )
        if endpoint.consecutive_failures != 0:
            WebhookEndpoint.objects.unscoped().filter(id=endpoint.id).update(consecutive_failures=0)
            endpoint.consecutive_failures = 0
        return None

    return lean_finish


def what_if_names(spec: str) -> list[str]:
    return [n.strip() for n in spec.replace("+", ",").split(",") if n.strip()]


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "bench"
    import django

    django.setup()
    apply_what_if(what_if_names(os.environ.get("BENCH_WEBHOOKS_WHATIF", "")))
    from config.celery import app

    app.worker_main(
        [
            "worker",
            "--pool",
            "solo",
            "--concurrency",
            "1",
            "--hostname",
            f"{name}@%h",
            "--loglevel",
            "WARNING",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ]
    )


if __name__ == "__main__":
    main()
