"""python -m bench.throughput: the same as python -m bench throughput."""

import sys

from bench.throughput.run import main

sys.exit(main())
