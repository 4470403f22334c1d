"""Remote APIs: :mod:`.http` (the one HTTP client: URL checks, the key from the
environment, redaction, retries), :mod:`.chat` (chat completions returning a
validated JSON object) and :mod:`.calls` (the cached-call layer every remote answer goes
through: its key, the usage rule, live or replayed provenance)."""
