# The environment the e2e tests give a subprocess serving the test database (DATABASE_URL, settings, Redis worker),
# and a real daphne on it (tests/live.py, shared with the browser tests).
from tests.e2e.conftest import worker_env  # noqa: F401
from tests.live import server, start_server  # noqa: F401
