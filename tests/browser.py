"""Open a page in headless Chromium over the DevTools protocol (``--remote-debugging-pipe``)
and report what it requested: every URL the page asked for, its text, a screenshot.

Only the page's own requests are recorded (``Network.requestWillBeSent`` of its
target), not Chromium's background traffic. Used by the HTML report test and to
draw docs/pages/img/report.png::

    python tests/browser.py report.html docs/pages/img/report.png
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


class Page:
    def __init__(self, url: str, requests: list[str], text: str, screenshot: bytes | None, values: list,
                 errors: list[str] | None = None):
        self.url, self.requests, self.text, self.screenshot, self.values = url, requests, text, screenshot, values
        self.errors = errors or []  # console errors, uncaught exceptions, failed loads

    @property
    def outside(self) -> list[str]:
        """Requests other than the page itself and inline ``data:`` URLs."""
        return [u for u in self.requests if u != self.url and not u.startswith("data:")]


def open_page(path: Path | str, width: int = 1280, height: int = 1800, screenshot: bool = False,
              expand: bool = False, evaluate: tuple[str, ...] = ()) -> Page:
    """Load ``path`` (file://, or an ``http://`` URL given as text) in headless Chromium:
    its requests, text, console errors, the values of the ``evaluate`` expressions (a
    promise is awaited) and (``screenshot``) a PNG."""
    url = path if isinstance(path, str) and path.startswith("http") else Path(path).resolve().as_uri()
    profile = tempfile.mkdtemp(prefix="receval-chromium-")
    to_r, to_w = os.pipe()  # we write commands -> chromium reads fd 3
    from_r, from_w = os.pipe()  # chromium writes fd 4 -> we read
    args = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
        f"--user-data-dir={profile}", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-extensions",
        "--hide-scrollbars", f"--window-size={width},{height}", "about:blank",
    ]

    def fds():  # the child reads commands on fd 3 and writes replies on fd 4
        high_r, high_w = os.dup(to_r) + 100, os.dup(from_w) + 100
        os.dup2(to_r, high_r)
        os.dup2(from_w, high_w)
        os.dup2(high_r, 3)
        os.dup2(high_w, 4)

    proc = subprocess.Popen(args, preexec_fn=fds, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, close_fds=False)
    os.close(to_r)
    os.close(from_w)
    reader = os.fdopen(from_r, "rb")
    buffer = b""
    counter = [0]
    events: list[dict] = []

    def send(method: str, params: dict | None = None, session: str | None = None) -> dict:
        nonlocal buffer
        counter[0] += 1
        message = {"id": counter[0], "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(to_w, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in buffer:
                chunk = os.read(from_r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe during {method}")
                buffer += chunk
            raw, buffer = buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == counter[0]:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            events.append(reply)

    try:
        target = send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        send("Network.enable", session=session)
        send("Page.enable", session=session)
        send("Runtime.enable", session=session)
        send("Log.enable", session=session)
        send("Page.navigate", {"url": url}, session=session)
        while not any(e.get("method") == "Page.loadEventFired" and e.get("sessionId") == session for e in events):
            send("Runtime.evaluate", {"expression": "1"}, session=session)
        if expand:
            send("Runtime.evaluate", {"expression": "document.querySelectorAll('details').forEach((d, i) => { if (i < 1) d.open = true })"}, session=session)
        values = [
            send("Runtime.evaluate", {"expression": e, "returnByValue": True, "awaitPromise": True},
                 session=session)["result"].get("value")
            for e in ("document.body.innerText", *evaluate)
        ]
        shot = None
        if screenshot:
            shot = base64.b64decode(send("Page.captureScreenshot", {"format": "png"}, session=session)["data"])
        page_events = [e for e in events if e.get("sessionId") == session]
        requests = [e["params"]["request"]["url"] for e in page_events if e.get("method") == "Network.requestWillBeSent"]
        return Page(url, requests, values[0], shot, values[1:], _errors(page_events))
    finally:
        try:
            send("Browser.close")
        except (RuntimeError, OSError):
            pass
        os.close(to_w)
        reader.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(profile, ignore_errors=True)


def _errors(events: list[dict]) -> list[str]:
    """The page's console errors, uncaught exceptions and failed loads, as text."""
    found = []
    for e in events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            found.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            found.append(f"{params['entry'].get('text', '')} {params['entry'].get('url', '')}".strip())
    return found


if __name__ == "__main__":
    page = open_page(Path(sys.argv[1]), screenshot=True, expand=True)
    Path(sys.argv[2]).write_bytes(page.screenshot)
    print(f"{len(page.requests)} requests, outside the page: {page.outside}")
