import sys

from bench.leadcapture.run import main

sys.exit(main())
