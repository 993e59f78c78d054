# The environment the e2e tests give a subprocess serving the test database (DATABASE_URL, settings, Redis worker),
# and the real server on it (tests/live.py, shared with the e2e and browser tests).
from tests.e2e.conftest import worker_env  # noqa: F401
from tests.live import start_server, web_server  # noqa: F401
