import sys

from bench.mcp.run import main

sys.exit(main())
