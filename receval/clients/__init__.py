"""Remote APIs: :mod:`.http` (the one HTTP client: URL checks, the key from the
environment, redaction, retries) and :mod:`.chat` (chat completions returning a
validated JSON object)."""
