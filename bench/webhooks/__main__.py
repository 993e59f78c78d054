import sys

from bench.webhooks.run import main

sys.exit(main())
