"""The clinical workspace's hub: the day list, booking from the clinical diary, the patient record, the PMS inbox,
practitioners linked to member accounts, clinical storage and patient forms."""
