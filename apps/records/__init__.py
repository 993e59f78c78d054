"""Clinical notes (append-only, amendments, signing with fresh re-authentication) and medical history
(versioned questionnaires and answers, alerts)."""
