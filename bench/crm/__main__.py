"""python -m bench crm: the CRM reads (journeys board, Today, calendar, my tasks) at 100,000 patients (issue 8)."""

import sys

from bench.crm.run import main

sys.exit(main())
