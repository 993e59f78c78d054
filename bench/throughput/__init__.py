"""python -m bench throughput — requests per second and latency through the real server with wrk (issue 16)."""
