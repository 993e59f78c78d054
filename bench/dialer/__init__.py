"""python -m bench dialer: signed telephony call events acknowledged per second (issue 22)."""
