"""The connected practice-management system: its connection, the historical import, live changes by signed
callback, patients linked to PMS patients, mirrored appointments and the sync review queue."""
