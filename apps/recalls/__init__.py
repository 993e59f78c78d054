"""Recalls (due dates by type, reminders through conversations) and the waitlist (patients wanting an earlier
slot, offered when one frees)."""
