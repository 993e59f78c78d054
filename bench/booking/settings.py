"""Settings of the booking benchmark's server and in-process SQL capture: bench.settings with the booking buckets and
the public abuse screen raised so that nothing is refused (both still checked, in Redis, on every request)."""

from bench.settings import *  # noqa: F403

SVC_BOOKING_CONFIG_BUCKET = (10**9, 10**6)
SVC_BOOKING_AVAILABILITY_BUCKET = (10**9, 10**6)
SVC_BOOKING_HOLD_BUCKET = (10**9, 10**6)
SVC_BOOKING_COMPLETE_BUCKET = (10**9, 10**6)
SVC_PUBLIC_SCREEN_RATE = "1000000/m"
