"""Debian's chromium, headless, driven through the DevTools protocol on a
pipe (--remote-debugging-pipe: JSON messages ending in NUL on fds 3 and 4),
so that a test sees every request the page makes, every console or log
entry, the rendered DOM and a screenshot. Standard library only."""

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(Exception):
    pass


class Chromium:
    def __init__(self, binary=None, timeout=60):
        self.binary = binary or find_chromium()
        if not self.binary:
            raise BrowserError("chromium is not installed")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="colmet-chromium.")
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        # Keep the child's ends away from 3 and 4 until they are moved there.
        hi_r = os.dup2(to_child_r, 10 + to_child_r + from_child_w)
        hi_w = os.dup2(from_child_w, 11 + to_child_r + from_child_w)
        os.close(to_child_r)
        os.close(from_child_w)

        def child_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        args = [self.binary, "--headless=new", "--remote-debugging-pipe", "--disable-gpu",
                f"--user-data-dir={self.profile}", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--mute-audio", "--hide-scrollbars", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")   # chromium refuses to run as root with its sandbox
        self.log_path = os.path.join(self.profile, "stderr.log")
        self._stderr = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._stderr, stderr=self._stderr,
                                     pass_fds=(3, 4), preexec_fn=child_fds)
        os.close(hi_r)
        os.close(hi_w)
        self._out = to_child_w
        self._in = from_child_r
        self._buf = b""
        self._id = 0
        self.events = []

    # --- protocol --------------------------------------------------------
    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer in time")
            ready, _, _ = select.select([self._in], [], [], left)
            if ready:
                chunk = os.read(self._in, 1 << 20)
                if not chunk:
                    raise BrowserError(f"chromium closed its pipe (see {self.log_path})")
                self._buf += chunk
        message, self._buf = self._buf.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=None):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method, session=None, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        for e in self.events:
            if e.get("method") == method and (session is None or e.get("sessionId") == session):
                return e
        while True:
            e = self._read_message(deadline)
            self.events.append(e)
            if e.get("method") == method and (session is None or e.get("sessionId") == session):
                return e

    def drain(self, seconds):
        """Collect the events that arrive within `seconds`."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read_message(deadline))
        except BrowserError:
            pass

    # --- one page --------------------------------------------------------
    def load(self, url, width, height, mobile=False):
        """Open url in a new tab of the given viewport; returns the session id."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, session=session)
        self.events.clear()
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session=session)
        self.drain(0.5)
        return session

    def evaluate(self, session, expression):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
        if "exceptionDetails" in r:
            raise BrowserError(f"evaluate: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, session, path, full_page=True):
        params = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics", session=session)["cssContentSize"]
            params.update({"captureBeyondViewport": True,
                           "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})
        data = base64.b64decode(self.send("Page.captureScreenshot", params, session=session)["data"])
        with open(path, "wb") as f:
            f.write(data)
        return path

    def requests(self):
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def errors(self):
        """Console errors, log entries of level error, uncaught exceptions, failed loads."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(f"log: {p['entry'].get('text')} ({p['entry'].get('url', '')})")
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(f"console: {p.get('args')}")
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails')}")
            elif m == "Network.loadingFailed":
                out.append(f"load failed: {p.get('errorText')}")
        return out

    def close(self):
        try:
            self.send("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# What the report tests evaluate in the page: each plot's figure, whether
# its image decoded, its size on screen, and whether the page fits the
# viewport's width (readable on a phone without scrolling sideways).
PAGE_PROBE = """
(() => {
  const plots = [...document.querySelectorAll('figure.plot')].map(f => {
    const img = f.querySelector('img');
    const r = img ? img.getBoundingClientRect() : {width: 0, height: 0};
    return {id: f.dataset.plot, title: (f.querySelector('h3') || {}).textContent || '',
            complete: !!(img && img.complete), naturalWidth: img ? img.naturalWidth : 0,
            naturalHeight: img ? img.naturalHeight : 0, width: r.width, height: r.height,
            src: img ? img.getAttribute('src').slice(0, 22) : ''};
  });
  return {plots, scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
          title: document.title, notes: document.querySelectorAll('#notes li').length,
          summaryRows: document.querySelectorAll('#summary tr').length,
          html: document.documentElement.outerHTML};
})()
"""


def render_report(html_path, screenshot_path, width=1000, height=900, mobile=False, full_page=True):
    """Load the report in chromium and take a screenshot (of the whole page,
    or of the viewport). Returns (probe dict, requests, errors, url)."""
    url = "file://" + os.path.abspath(html_path)
    with Chromium() as browser:
        session = browser.load(url, width, height, mobile)
        probe = browser.evaluate(session, PAGE_PROBE)
        browser.screenshot(session, screenshot_path, full_page)
        return probe, browser.requests(), browser.errors(), url
