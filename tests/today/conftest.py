# The environment the e2e tests give a subprocess serving the test database (DATABASE_URL, settings, Redis worker).
from tests.e2e.conftest import start_server, web_server, worker_env  # noqa: F401
