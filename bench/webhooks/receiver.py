"""The local webhook receiver: an asyncio HTTP/1.1 server in its own process that answers every POST 200 at once.

    python -m bench.webhooks.receiver --port PORT

Prints "ready PORT" once listening, then one tab-separated line per request received:

    receive_time  path  X-Service-Delivery-Id  X-Service-Timestamp  X-Service-Signature  raw_body

receive_time is time.monotonic() (CLOCK_MONOTONIC: the same clock in every process of the machine) taken when the
whole body has been read, before answering. Lines are buffered and flushed every 20 ms so that writing never slows
the answers. The bodies let the driver check every signature with the endpoints' secrets and read the envelope id.
Stops on SIGTERM / SIGINT.
"""

import argparse
import asyncio
import signal
import sys
import time

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nok"
BAD = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
MAX_BODY = 1 << 20


class Receiver:
    def __init__(self, out):
        self.out = out
        self.buffer: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:  # HTTP/1.1 keep-alive would be honoured, but the app's sender sends one request per connection
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                parts = lines[0].split(" ")
                path = parts[1] if len(parts) > 1 else ""
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                if length > MAX_BODY:
                    writer.write(BAD)
                    return
                body = await reader.readexactly(length) if length else b""
                received = time.monotonic()
                writer.write(RESPONSE)
                self.buffer.append(
                    b"\t".join(
                        (
                            repr(received).encode(),
                            path.encode(),
                            headers.get("x-service-delivery-id", "").encode(),
                            headers.get("x-service-timestamp", "").encode(),
                            headers.get("x-service-signature", "").encode(),
                            body.replace(b"\t", b"\\t").replace(b"\n", b"\\n"),
                        )
                    )
                    + b"\n"
                )
                await writer.drain()
                if headers.get("connection", "").lower() != "keep-alive":
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    async def flusher(self) -> None:
        while True:
            await asyncio.sleep(0.02)
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            chunk, self.buffer = b"".join(self.buffer), []
            self.out.write(chunk)
            self.out.flush()


async def serve(port: int) -> None:
    receiver = Receiver(sys.stdout.buffer)
    server = await asyncio.start_server(receiver.handle, "127.0.0.1", port, backlog=1024, reuse_address=True)
    bound = server.sockets[0].getsockname()[1]
    sys.stdout.buffer.write(f"ready {bound}\n".encode())
    sys.stdout.buffer.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    flusher = asyncio.create_task(receiver.flusher())
    async with server:
        await stop.wait()
    flusher.cancel()
    receiver.flush()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.webhooks.receiver")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed on the ready line)")
    args = parser.parse_args()
    asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
