"""python -m bench crm: the journeys board, GET /today, the calendar and "my tasks" at 100,000 patients (issue 8),
through the real HTTP stack next to the same SQL run directly. Built on the patients benchmark's parts."""
