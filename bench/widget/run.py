"""python -m bench widget — chat-widget sockets (issue 21; target: 500 concurrent widget sockets with one message each
per second, delivery p99 < 200 ms; memory per socket reported).

1. Database practice_crm_bench_widget (BENCH_WIDGET_DATABASE_URL overrides) rebuilt and migrated; Redis database 11
   (BENCH_WIDGET_REDIS_URL) flushed and used by the server (cache, limits, channel layer). Server settings
   bench.widget.settings: the widget's buckets and the abuse screen raised so nothing is refused (still checked).
2. A practice (manage.py create_practice --api-key), one widget through the API (allowed origin the bench's), and
   --sockets visitors with open threads (apps.widget.services in this process: what POST …/visitors and POST …/thread
   do). The serving stack `python -m config.serve` (nginx, gunicorn, daphne), as `make run` serves it.
3. --sockets WebSocket clients (tornado, one asyncio loop in this process) open /widget/{key}/ws through nginx, send
   the auth frame and wait for "ready". Daphne's RSS is read before the first socket and once all are ready: memory
   per socket = the difference / sockets.
4. Pushes (practice → visitor): a separate publisher process sends each visitor one practice message per second for
   --seconds, through the channel layer exactly as the widget's delivery does (apps.widget.live: group_send of a
   "message" frame to the visitor's group); the frame's body carries the publish time. Delivery = receipt on the
   client - publish time (same clock).
5. Visitor messages: each socket sends one {"type": "message"} frame per second for --seconds (staggered over the
   second); round trip = the "ack" (the message kept durably, apps.widget.services.message_accept) - the send. Two
   Celery workers file them in the inbox (store_received); the bench waits until all are filed and reports how long
   after the last send that was, and the rate.
Figures go to bench/results/widget.json (docs/benchmarks.md is written by hand from them).
"""

import argparse
import asyncio
import datetime
import json
import multiprocessing
import os
import random
import time
from collections import Counter

import httpx

from bench import env
from bench.measure import quantile, rss_bytes, uptime
from bench.paths import RESULTS, VENV_BIN

DEFAULT_URL = env.DEFAULT_URL + "_widget"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/11"
ORIGIN = "https://www.bench.example"
WAIT = 60
INBOX_WAIT = 600  # seconds the bench waits for the worker to file every acknowledged visitor message
WORKERS = ("widget-a", "widget-b")  # the worker processes filing visitor messages (one per core)


def log(message: str) -> None:
    print(f"[bench widget] {message}", flush=True)


def seed_visitors(embed_key: str, count: int) -> list[tuple[str, str]]:
    """`count` visitors of the widget with open threads: (visitor id, token)."""
    from apps.widget import selectors, services

    widget = selectors.widget_for_key(embed_key)
    visitors = []
    for n in range(count):
        started = services.visitor_start(widget=widget)
        services.thread_open(
            widget=widget, visitor=started.visitor, data={"name": f"Visitor {n}", "email": f"v{n}@bench.example"}
        )
        visitors.append((str(started.visitor.id), started.token))
    return visitors


def publish(url: str, redis_url: str, visitor_ids: list[str], seconds: int, start_at: float) -> None:
    """The practice's side (in its own process): one message a second to each visitor's group, spread over the
    second, the publish time in the body."""
    os.environ.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
    env.SETTINGS_MODULE = "bench.widget.settings"
    env.setup_django(url)
    from channels.layers import get_channel_layer

    from apps.widget import live

    async def run() -> None:
        layer = get_channel_layer()
        gap = 1.0 / len(visitor_ids)
        await asyncio.sleep(max(0.0, start_at - time.time()))
        t0 = time.monotonic()
        for second in range(seconds):
            for index, visitor_id in enumerate(visitor_ids):
                due = t0 + second + index * gap
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                frame = live.message_frame(
                    message_id=f"{second}-{index}",
                    body=f"{time.time():.6f}",
                    sent_at=datetime.datetime.now(datetime.UTC),
                    from_="practice",
                )
                await layer.group_send(live.visitor_group(visitor_id), {"type": live.VISITOR_MESSAGE, "frame": frame})

    asyncio.run(run())


class Client:
    def __init__(self, index: int, token: str):
        self.index, self.token = index, token
        self.connection = None
        self.ready = asyncio.Event()
        self.pushes: list[float] = []  # delivery ms
        self.acks: list[float] = []  # round trip ms
        self.sent: dict[str, float] = {}
        self.errors: list[str] = []
        self.closed: tuple | None = None

    async def open(self, ws_url: str) -> None:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        request = HTTPRequest(ws_url, headers={"Origin": ORIGIN}, connect_timeout=WAIT, request_timeout=WAIT)
        self.connection = await websocket_connect(request)
        await self.connection.write_message(json.dumps({"type": "auth", "visitorToken": self.token}))
        self.reader = asyncio.ensure_future(self.read())
        await asyncio.wait_for(self.ready.wait(), WAIT)

    async def read(self) -> None:
        while True:
            raw = await self.connection.read_message()
            now = time.time()
            if raw is None:
                self.closed = (self.connection.close_code, self.connection.close_reason)
                self.ready.set()
                return
            frame = json.loads(raw)
            kind = frame.get("type")
            if kind == "ready":
                self.ready.set()
            elif kind == "message":
                self.pushes.append((now - float(frame["message"]["body"])) * 1000)
            elif kind == "ack":
                started = self.sent.pop(frame["clientMessageId"], None)
                if started is not None:
                    self.acks.append((time.perf_counter() - started) * 1000)
            elif kind == "error":
                self.errors.append(frame.get("code", "?"))

    async def send_messages(self, seconds: int) -> None:
        await asyncio.sleep(random.random())
        t0 = time.monotonic()
        for second in range(seconds):
            delay = t0 + second - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if self.closed:
                return
            client_id = f"b{self.index}-{second}"
            self.sent[client_id] = time.perf_counter()
            await self.connection.write_message(
                json.dumps({"type": "message", "body": f"Bench message {second}", "clientMessageId": client_id})
            )


def daphne_pids(server: env.Server) -> list[int]:
    """Every daphne process (config.server) of the serving stack: config.serve starts SVC_SOCKET_WORKERS of them."""
    pids = []
    for pid in server.pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"config.server" in handle.read():
                    pids.append(pid)
        except OSError:
            continue
    if not pids:
        raise SystemExit("bench widget: no daphne process (config.server) under the server")
    return pids


def daphne_rss(pids: list[int]) -> int:
    return sum(rss_bytes(pid) for pid in pids)


def summary(values: list[float]) -> dict:
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "p50_ms": round(quantile(values, 50), 1),
        "p95_ms": round(quantile(values, 95), 1),
        "p99_ms": round(quantile(values, 99), 1),
        "max_ms": round(max(values), 1),
    }


async def drive(ws_url: str, clients: list[Client], args, publisher_start) -> dict:
    figures: dict = {}
    opened_at = time.monotonic()
    batch = 10  # handshakes in flight at once
    for start in range(0, len(clients), batch):
        await asyncio.gather(*(client.open(ws_url) for client in clients[start : start + batch]))
    refused = [client.closed for client in clients if client.closed]
    figures["refused_at_open"] = refused
    if refused:
        log(f"{len(refused)} sockets closed while opening, e.g. {refused[:3]}; measuring the others")
        clients[:] = [client for client in clients if not client.closed]
    figures["open_seconds"] = round(time.monotonic() - opened_at, 2)
    await asyncio.sleep(2)
    figures["rss_after"] = daphne_rss(args.daphne_pids)

    log(f"{len(clients)} sockets ready in {figures['open_seconds']} s; pushes for {args.seconds} s")
    publisher_start()
    deadline = time.monotonic() + args.seconds + 3 + WAIT
    while sum(len(c.pushes) for c in clients) < len(clients) * args.seconds and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    log(f"visitor messages for {args.seconds} s")
    await asyncio.gather(*(client.send_messages(args.seconds) for client in clients))
    deadline = time.monotonic() + WAIT
    while any(client.sent for client in clients) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    figures["rss_end"] = daphne_rss(args.daphne_pids)
    figures["inbox"] = await asyncio.to_thread(wait_for_inbox, args.seconds, args.inbox_wait)
    return figures


def wait_for_inbox(seconds: int, inbox_wait: int = INBOX_WAIT) -> dict:
    """The worker's side: how long after the last visitor message the inbox held every acknowledged one (the
    socket acks once a message is kept; the worker files it), and the rate it filed them at."""
    from apps.conversations.models import Message
    from apps.widget.models import ReceivedMessage

    started = time.monotonic()
    deadline = started + inbox_wait
    while ReceivedMessage.objects.unscoped().exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    waited = time.monotonic() - started
    filed = Message.objects.unscoped().filter(direction="inbound").count()
    return {
        "filed": filed,
        "unfiled": ReceivedMessage.objects.unscoped().count(),
        "seconds_after_last_send": round(waited, 1),
        "filed_per_second": round(filed / (seconds + waited), 1),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench widget", description=__doc__)
    parser.add_argument("--sockets", type=int, default=500)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--inbox-wait", type=int, default=INBOX_WAIT, help="seconds to wait for the inbox filing")
    args = parser.parse_args(argv)

    url = env.database_url("BENCH_WIDGET_DATABASE_URL", DEFAULT_URL)
    redis_url = env.flushable_redis_url("BENCH_WIDGET_REDIS_URL", DEFAULT_REDIS_URL)
    env.SETTINGS_MODULE = "bench.widget.settings"
    os.environ.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
    env.flush_redis(redis_url)
    log(f"rebuilding {env.database_name(url)}")
    env.rebuild(url)
    created = json.loads(
        env.manage(
            url,
            "create_practice",
            "--name",
            "Widget bench",
            "--owner-email",
            "owner@widget.example",
            "--owner-password",
            "bench-password-1",
            "--api-key",
            "--json",
        )
        .strip()
        .splitlines()[-1]
    )
    env.setup_django(url)

    server = env.Server(url, RESULTS / "widget-serve.log")
    workers = env.CeleryWorkers(
        list(WORKERS),
        env=env.server_env(url),
        log_paths=[RESULTS / f"widget-{name}.log" for name in WORKERS],
        commands=[
            [str(VENV_BIN / "celery"), "-A", "config", *env.worker_arguments(name, pool="prefork", concurrency=1)]
            for name in WORKERS
        ],
    )
    publisher = None
    try:
        server.start()
        workers.wait_ready()
        base = f"http://127.0.0.1:{server.port}"
        api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {created['apiKey']}"}, timeout=60)
        widget = api.post("/widget-connections", json={"name": "Bench chat", "allowedOrigins": [ORIGIN]})
        if widget.status_code != 201:
            raise SystemExit(f"bench widget: creating the widget answered {widget.status_code}: {widget.text[:300]}")
        key = widget.json()["embedKey"]
        started = time.monotonic()
        visitors = seed_visitors(key, args.sockets)
        log(f"{len(visitors)} visitors with open threads in {time.monotonic() - started:.1f}s")

        args.daphne_pids = daphne_pids(server)
        rss_before = daphne_rss(args.daphne_pids)
        clients = [Client(index, token) for index, (_, token) in enumerate(visitors)]

        def start_publisher() -> None:
            nonlocal publisher
            publisher = multiprocessing.get_context("spawn").Process(
                target=publish,
                args=(url, redis_url, [visitor_id for visitor_id, _ in visitors], args.seconds, time.time() + 3),
            )
            publisher.start()

        figures = asyncio.run(drive(f"ws://127.0.0.1:{server.port}/widget/{key}/ws", clients, args, start_publisher))
        if publisher is not None:
            publisher.join(timeout=WAIT)
        load = uptime()
    finally:
        if publisher is not None and publisher.is_alive():
            publisher.terminate()
        server.stop()
        workers.stop()

    pushes = [ms for client in clients for ms in client.pushes]
    acks = [ms for client in clients for ms in client.acks]
    expected = len(clients) * args.seconds
    closed = [client.closed for client in clients if client.closed]
    errors = [code for client in clients for code in client.errors]
    figures = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "sockets": args.sockets,
        "sockets_open": len(clients),
        "refused_at_open": [list(item) for item in figures["refused_at_open"]],
        "seconds": args.seconds,
        "open_seconds": figures["open_seconds"],
        "daphne_processes": len(args.daphne_pids),
        "daphne_rss_before_mb": round(rss_before / 2**20, 1),
        "daphne_rss_sockets_ready_mb": round(figures["rss_after"] / 2**20, 1),
        "daphne_rss_end_mb": round(figures["rss_end"] / 2**20, 1),
        "memory_per_socket_kb": round((figures["rss_after"] - rss_before) / args.sockets / 1024, 1),
        "pushes_expected": expected,
        "push_delivery": summary(pushes),
        # Which sockets missed pushes: {pushes received: sockets}, for the sockets that did not get all of them.
        "sockets_short_of_pushes": dict(
            sorted(Counter(len(c.pushes) for c in clients if len(c.pushes) < args.seconds).items())
        ),
        "messages_expected": expected,
        "message_ack": summary(acks),
        "inbox": figures["inbox"],
        "sockets_closed": len(closed),
        "errors": len(errors),
        "load": load,
    }
    problems = []
    if len(pushes) != expected or len(acks) != expected:
        problems.append(f"{len(pushes)}/{expected} pushes and {len(acks)}/{expected} acks arrived")
    if figures["refused_at_open"]:
        problems.append(f"{len(figures['refused_at_open'])} of {args.sockets} sockets closed while opening")
    if closed or errors:
        problems.append(f"{len(closed)} sockets closed (e.g. {closed[:2]}), errors {sorted(set(errors))[:5]}")
    if pushes and quantile(pushes, 99) >= 200:
        problems.append(f"push delivery p99 {quantile(pushes, 99):.0f} ms (target < 200 ms)")
    if acks and quantile(acks, 99) >= 200:
        problems.append(f"visitor message ack p99 {quantile(acks, 99):.0f} ms (target < 200 ms)")
    if figures["inbox"]["unfiled"]:
        unfiled = figures["inbox"]["unfiled"]
        problems.append(f"{unfiled} acknowledged messages not in the inbox after {args.inbox_wait} s")
    figures["problems"] = problems
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "widget.json").write_text(json.dumps(figures, indent=2))
    log(json.dumps(figures, indent=2))
    if problems:
        log("FAILED: " + "; ".join(problems))
        return 1
    return 0
