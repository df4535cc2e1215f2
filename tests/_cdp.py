"""A headless Chromium driven through its DevTools protocol (CDP), over aiohttp's websocket client (aiohttp
is already a dependency): enough to load a page, run JavaScript in it, press keys, size the viewport
and take screenshots, with the page's exceptions and console errors (CSP refusals among them) kept.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import pytest


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine: `apt-get install -y chromium` (Debian) provides it")


class Browser:
    def __init__(self, profile: Path, width: int = 1280, height: int = 900) -> None:
        self.loop = asyncio.new_event_loop()
        self.process = subprocess.Popen(
            [
                chromium(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("Chromium did not open its DevTools port")
            time.sleep(0.05)
        port = int(port_file.read_text().splitlines()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            pages = [t for t in json.loads(response.read()) if t["type"] == "page"]
        self.errors: list[str] = []
        self._id = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.loop.run_until_complete(self._connect(pages[0]["webSocketDebuggerUrl"]))
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.viewport(width, height)

    async def _connect(self, url: str) -> None:
        self._session = aiohttp.ClientSession()
        self._ws = await self._session.ws_connect(url, max_msg_size=0)
        self._reader = self.loop.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._ws:
            data = json.loads(message.data)
            if "id" in data and data["id"] in self._waiting:
                self._waiting.pop(data["id"]).set_result(data)
            elif data.get("method") == "Runtime.exceptionThrown":
                details = data["params"]["exceptionDetails"]
                self.errors.append(details.get("exception", {}).get("description") or details["text"])
            elif data.get("method") == "Log.entryAdded" and data["params"]["entry"]["level"] == "error":
                self.errors.append(data["params"]["entry"]["text"])
            elif data.get("method") == "Runtime.consoleAPICalled" and data["params"]["type"] == "error":
                self.errors.append(json.dumps(data["params"]["args"]))

    async def _send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        future: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self._waiting[self._id] = future
        await self._ws.send_str(json.dumps({"id": self._id, "method": method, "params": params}))
        answer = await asyncio.wait_for(future, 30)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return dict(answer["result"])

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        return self.loop.run_until_complete(self._send(method, params))

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float = 10.0) -> Any:
        """Poll `expression` in the page until it is truthy; its value. Throwing counts as not yet (the
        page may still be loading)."""
        deadline = time.monotonic() + timeout_s
        while True:
            problem = None
            try:
                value = self.evaluate(expression)
                if value:
                    return value
            except RuntimeError as exc:
                problem = exc
            if time.monotonic() > deadline:
                raise AssertionError(f"not true within {timeout_s} s: {expression} ({problem})")
            time.sleep(0.05)

    def navigate(self, url: str) -> None:
        self.send("Page.navigate", url=url)

    def viewport(self, width: int, height: int) -> None:
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def press(self, key: str, code: int, text: str = "") -> None:
        self.send(
            "Input.dispatchKeyEvent", type="keyDown", key=key, code=key, windowsVirtualKeyCode=code, text=text
        )
        self.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=key, windowsVirtualKeyCode=code)

    def type_text(self, text: str) -> None:
        for char in text:
            self.send("Input.dispatchKeyEvent", type="char", text=char)

    def screenshot(self, path: Path) -> None:
        shot = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if hasattr(self, "_ws"):
                self.loop.run_until_complete(self._ws.close())
                self.loop.run_until_complete(self._session.close())
                self._reader.cancel()
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.loop.close()
