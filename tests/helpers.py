"""Assertions shared by the HTTP tests."""


def assert_error(response, status: int, code: str) -> dict:
    """The response is the ApiError envelope with this status and code; returns the body."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"code", "message", "details"}, body
    assert body["code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["details"], dict)
    return body


def run_in_threads(worker, *, count: int = 2, timeout: float = 20) -> list[BaseException]:
    """Run `worker` in `count` threads at once, each closing its own database connection when done; wait up to
    `timeout` seconds for each. Returns what the workers raised (reported to the test, not swallowed); a worker still
    running after the wait is reported too."""
    import threading

    from django.db import connection

    errors: list[BaseException] = []
    lock = threading.Lock()

    def run():
        try:
            worker()
        except BaseException as exc:  # reported to the caller
            with lock:
                errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    errors.extend(
        TimeoutError(f"{thread.name} still running after {timeout}s") for thread in threads if thread.is_alive()
    )
    return errors
