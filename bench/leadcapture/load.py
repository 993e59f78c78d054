"""The load generator: threads, each with one keep-alive http.client connection to one of the daphne processes,
posting signed lead submissions to the capture forms as a website backend or a call system would.

The mix (decided per request from a seeded random generator, so two runs send the same kinds in the same order):
- new leads (a fresh e-mail and phone): the capture creates a patient and opens a journey;
- repeats: a new submission with the e-mail of a patient already there (half a patient of the seed, half a lead
  this run created earlier and that was answered 201), so the capture matches the patient instead;
- retries: the exact request (same form, delivery id and body, a fresh timestamp and signature) of a submission
  already answered 201, as a sender does when it missed the answer: the app answers 201 and stores nothing new.

The forms' buckets (200 burst + 5/s each, `SVC_CAPTURE_FORM_BUCKET`, unchanged) are never raised: the generator
keeps a mirror of each bucket and sends to the next form, round-robin, that still has tokens to spare (a margin
of BUCKET_MARGIN under the server's count), waiting when none has (counted and reported as "paced")."""

import hashlib
import hmac
import http.client
import json
import random
import threading
import time
from dataclasses import dataclass, field

BUCKET_BURST, BUCKET_RATE = 200, 5.0  # config.settings.base.SVC_CAPTURE_FORM_BUCKET (checked at start-up)
BUCKET_MARGIN = 20.0
REPEAT_SHARE = 0.12
RETRY_SHARE = 0.03

FIRST_NAMES = [
    "Giulia", "Marco", "Francesca", "Luca", "Chiara", "Alessandro", "Sara", "Matteo", "Martina", "Andrea",
    "Emma", "Oliver", "Sophie", "James", "Amelia", "Harry", "Isla", "George", "Aisha", "Mohammed",
]  # fmt: skip
LAST_NAMES = [
    "Rossi", "Russo", "Ferrari", "Esposito", "Bianchi", "Romano", "Colombo", "Ricci", "Marino", "Greco",
    "Smith", "Jones", "Taylor", "Brown", "Williams", "Wilson", "Davies", "Evans", "Khan", "O'Connor",
]  # fmt: skip
SOURCES = [  # (utm_source, utm_medium, click id name or "")
    ("google", "cpc", "gclid"),
    ("google", "cpc", "gclid"),
    ("facebook", "paid_social", "fbclid"),
    ("instagram", "paid_social", "fbclid"),
    ("newsletter", "email", ""),
    ("", "", ""),  # direct / organic: no marketing parameters
]
CAMPAIGNS = ["implants-spring", "invisalign-2026", "whitening-promo", "hygiene-recall", "brand"]
MESSAGES = [
    "I'd like a quote for a dental implant, I'm missing a lower molar.",
    "Do you offer clear aligners? Looking for prices and a first consultation.",
    "Interested in teeth whitening before my wedding in June.",
    "I have a chipped front tooth, can I book an appointment this week?",
    "Vorrei informazioni sull'igiene dentale e sui costi della prima visita.",
    "Please call me back in the afternoon about veneers.",
    "",
]


@dataclass
class Form:
    index: int
    form_id: str
    path: str
    secret: str
    tokens: float = float(BUCKET_BURST)
    stamp: float = 0.0
    sent: int = 0


@dataclass
class Sent:
    """One request: its kind, when it started and ended (time.monotonic), its latency (ns) and status."""

    kind: str
    form: int
    delivery_id: str
    started: float
    ended: float
    ns: int
    status: int
    email: str = ""


@dataclass
class Results:
    sent: list[Sent] = field(default_factory=list)
    failures: list[tuple[int, str, bytes]] = field(default_factory=list)  # (status, delivery id, body) — first 20
    errors: list[str] = field(default_factory=list)  # connection errors
    paced_waits: int = 0
    paced_seconds: float = 0.0
    reconnects: int = 0


def sign(secret: str, timestamp: str, delivery_id: str, body: bytes) -> str:
    """The README's recipe, written out here rather than imported from the app: "v1=" + hex HMAC-SHA256 over
    "<timestamp>.<delivery id>.<raw body>"."""
    return "v1=" + hmac.new(secret.encode(), f"{timestamp}.{delivery_id}.".encode() + body, hashlib.sha256).hexdigest()


class Plan:
    """What to send next (thread-safe): the request kind, the form (bucket-aware round-robin) and the body."""

    def __init__(self, forms: list[Form], seeded_emails: list[str], *, run: str, phone_prefix: str, seed: int = 9):
        self.forms = forms
        self.phone_prefix = phone_prefix
        self.seeded_emails = seeded_emails
        self.run = run
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.sequence = 0
        self.cursor = 0
        self.accepted_new: list[str] = []  # e-mails of new leads answered 201
        self.accepted: list[tuple[int, str, bytes]] = []  # (form index, delivery id, body) answered 201
        now = time.monotonic()
        for form in forms:
            form.stamp = now

    def _refill(self, form: Form, now: float) -> None:
        form.tokens = min(float(BUCKET_BURST), form.tokens + (now - form.stamp) * BUCKET_RATE)
        form.stamp = now

    def _take(self, form: Form, now: float) -> bool:
        self._refill(form, now)
        if form.tokens - 1 < BUCKET_MARGIN:
            return False
        form.tokens -= 1
        form.sent += 1
        return True

    def _next_form(self, now: float) -> Form | None:
        for _ in range(len(self.forms)):
            form = self.forms[self.cursor]
            self.cursor = (self.cursor + 1) % len(self.forms)
            if self._take(form, now):
                return form
        return None

    def _lead(self, n: int, email: str | None) -> dict:
        r = self.random
        first, last = r.choice(FIRST_NAMES), r.choice(LAST_NAMES)
        source, medium, click = r.choice(SOURCES)
        body = {
            "first_name": first,
            "last_name": last,
            "email": email or f"{first}.{last}.{self.run}.{n}@example.net".lower().replace("'", ""),
            # +44 74xx …: UK mobiles, a prefix per measurement; the seed's numbers are Italian (+39 3…), so a new
            # lead matches nobody.
            "phone": f"+44 {self.phone_prefix} {n % 1_000_000:06d}",
            "message": r.choice(MESSAGES),
            "marketing_consent": "yes" if r.random() < 0.6 else "no",
        }
        if source:
            body |= {"utm_source": source, "utm_medium": medium, "utm_campaign": r.choice(CAMPAIGNS)}
        if click:
            body[click] = f"{click[:2]}-{self.run}-{n}-{r.getrandbits(64):016x}"
        return body

    def next(self) -> tuple[str, Form, str, bytes, str] | None:
        """(kind, form, delivery id, raw body, e-mail), or None when every form's bucket is short for now."""
        with self.lock:
            now = time.monotonic()
            roll = self.random.random()
            if roll < RETRY_SHARE and self.accepted:
                index, delivery_id, body = self.accepted[self.random.randrange(len(self.accepted))]
                form = self.forms[index]
                if self._take(form, now):
                    return "retry", form, delivery_id, body, ""
            form = self._next_form(now)
            if form is None:
                return None
            self.sequence += 1
            n = self.sequence
            kind, email = "new", None
            if roll >= 1 - REPEAT_SHARE:
                kind = "repeat"
                pool = self.accepted_new if (n % 2 and self.accepted_new) else self.seeded_emails
                email = pool[self.random.randrange(len(pool))]
            lead = self._lead(n, email)
            delivery_id = f"lead-{self.run}-{n}"
            return kind, form, delivery_id, json.dumps(lead, separators=(",", ":")).encode(), lead["email"]

    def accept(self, kind: str, form: Form, delivery_id: str, body: bytes, email: str) -> None:
        with self.lock:
            if kind != "retry":
                self.accepted.append((form.index, delivery_id, body))
            if kind == "new":
                self.accepted_new.append(email)


def _ok(data: bytes) -> bool:
    try:
        return json.loads(data) == {"ok": True}
    except ValueError:
        return False


def _connect(port: int) -> http.client.HTTPConnection:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.connect()
    return conn


def worker(plan: Plan, port: int, stop_at: float, results: Results, lock: threading.Lock) -> None:
    conn = _connect(port)
    local: list[Sent] = []
    try:
        while time.monotonic() < stop_at:
            picked = plan.next()
            if picked is None:
                waited = time.monotonic()
                time.sleep(0.02)
                with lock:
                    results.paced_waits += 1
                    results.paced_seconds += time.monotonic() - waited
                continue
            kind, form, delivery_id, body, email = picked
            timestamp = str(int(time.time()))
            headers = {
                "Content-Type": "application/json",
                "Accept": "application/json",
                "X-Service-Delivery-Id": delivery_id,
                "X-Service-Timestamp": timestamp,
                "X-Service-Signature": sign(form.secret, timestamp, delivery_id, body),
            }
            started = time.monotonic()
            t0 = time.perf_counter_ns()
            try:
                conn.request("POST", form.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except (http.client.HTTPException, OSError) as exc:
                conn.close()
                with lock:
                    results.errors.append(f"{type(exc).__name__}: {exc}")
                    results.reconnects += 1
                local.append(Sent(kind, form.index, delivery_id, started, time.monotonic(), 0, 0, email))
                conn = _connect(port)
                continue
            ns = time.perf_counter_ns() - t0
            local.append(Sent(kind, form.index, delivery_id, started, time.monotonic(), ns, response.status, email))
            if response.status == 201 and _ok(data):
                plan.accept(kind, form, delivery_id, body, email)
            else:
                with lock:
                    if len(results.failures) < 20:
                        results.failures.append((response.status, delivery_id, data[:300]))
            if response.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = _connect(port)
    finally:
        conn.close()
        with lock:
            results.sent.extend(local)


def run(plan: Plan, ports: list[int], *, concurrency: int, seconds: float) -> Results:
    """`concurrency` threads (spread evenly over the ports) posting until `seconds` from now; returns when all
    have finished their last request."""
    results, lock = Results(), threading.Lock()
    stop_at = time.monotonic() + seconds
    threads = [
        threading.Thread(target=worker, args=(plan, ports[i % len(ports)], stop_at, results, lock), daemon=True)
        for i in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
