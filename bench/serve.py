"""Measure `fncore serve`'s app over HTTP: its cost per request, 500 streams, and a peer.

Each app runs on one uvicorn worker in a server process of its own, on a free port of
127.0.0.1, with the same settings (``--log-level warning --no-access-log``, uvicorn's
defaults otherwise); the apps are in ``_serve_apps.py``. The client is this process: one
``httpx.AsyncClient`` with keep-alive, its requests sent by a number of concurrent workers.

* ``serve_overhead_ratio``: the server's CPU time per request of ``POST
  /v1/chat/completions`` (non-streaming, the reference workload of ``overhead.py``) over
  that of a plain Starlette endpoint in the same app awaiting the same agent's ``run`` and
  answering JSON; 50 concurrent requests, the two taken in turn, each the minimum over the
  rounds. The server's CPU time (user and system, from ``/proc``) is what a request costs
  it; the wall time per request is reported too (``serve_wall_ratio``), but with the
  client on the same two cores it is bounded by the client as much as by the server.
* ``streams_500_ok``: 500 concurrent streaming requests to a fresh server whose model
  streams an answer made of the prompt in 8 pieces, giving the event loop a turn before
  each; true when every one completed with its own answer. Their p50 and p99 latency (from
  sending to the stream's end), the server's peak RSS (``VmHWM``), the wall time of the
  500 and the server's CPU time in it.
* Side by side: the reference workload streamed through AG-UI, by Pydantic AI's AG-UI
  adapter and by fncore's ``POST /ag-ui``, and through fncore's streaming
  ``/v1/chat/completions`` too; 50 concurrent, requests per second of each (and its
  server's CPU time per request), the three taken in turn. Every answer is checked whole:
  an AG-UI run must start, call ``add`` and get ``3``, close what it opened and finish,
  with the expected text; a chat stream must end with ``"stop"`` and ``[DONE]``. Pydantic
  AI is never a dependency of fncore: it runs under ``--peers-python`` (default: this
  interpreter), in a venv of its own (see docs/performance.md); ``--no-peers`` leaves it
  out (fncore's two are measured still).

Usage::

    python bench/serve.py            # full run, human-readable table
    python bench/serve.py --json     # the same, then one JSON object as the last line
    python bench/serve.py --quick    # a fast smoke run (figures are rough)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from bench import _measure, _serve_apps
else:  # run as a script, whose folder is on sys.path
    import _measure
    import _serve_apps

BENCH = Path(__file__).resolve().parent
CONCURRENCY = 50
"""Concurrent requests in the overhead and side-by-side measurements."""
STREAMS = 500
"""Concurrent streaming requests in ``streams_500_ok``."""
TICKS = os.sysconf("SC_CLK_TCK")
"""The unit of a process's CPU times in ``/proc/<pid>/stat``."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    """A uvicorn process serving one app factory of ``_serve_apps`` on a free port."""

    process: asyncio.subprocess.Process
    url: str

    def cpu_seconds(self) -> float:
        """The process's CPU time so far, user and system."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def peak_rss_mb(self) -> float:
        """The process's peak resident set size, in MiB."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        msg = "no VmHWM in /proc/<pid>/status"
        raise RuntimeError(msg)


@contextlib.asynccontextmanager
async def serving(factory: str, python: str = sys.executable) -> AsyncIterator[Server]:
    """Run ``_serve_apps.<factory>`` under uvicorn with ``python`` until the block ends."""
    port = _free_port()
    command = [python, "-m", "uvicorn", "--app-dir", str(BENCH), "--factory"]
    command += [f"_serve_apps:{factory}", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--log-level", "warning", "--no-access-log"]
    process = await asyncio.create_subprocess_exec(*command)
    try:
        for _ in range(300):
            if process.returncode is not None:
                msg = f"the server for {factory} exited with status {process.returncode}"
                raise RuntimeError(msg)
            try:
                _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            break
        yield Server(process, f"http://127.0.0.1:{port}")
    finally:
        process.terminate()
        await process.wait()


def _client(connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(limits=limits, timeout=120)


# -- the requests -----------------------------------------------------------------------------


def _chat_body(prompt: str, *, stream: bool) -> dict[str, Any]:
    return {"model": "fncore", "messages": [{"role": "user", "content": prompt}], "stream": stream}


def _agui_body(prompt: str) -> dict[str, Any]:
    """A `RunAgentInput` of one user message, on a thread of its own.

    fncore's ``/ag-ui`` keeps the thread as a stored session: a fresh one per request runs
    the same one-message workload each time, rather than a conversation that grows.
    """
    return {
        "threadId": uuid.uuid4().hex,
        "runId": "run",
        "state": None,
        "messages": [{"id": "m1", "role": "user", "content": prompt}],
        "tools": [],
        "context": [],
        "forwardedProps": None,
    }


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise RuntimeError(what)


Send = Callable[[httpx.AsyncClient, str], Awaitable[str]]
"""One request on a client, for a prompt, to the answer's text."""


async def completion(client: httpx.AsyncClient, url: str) -> str:
    """A non-streaming chat completion of the reference prompt: its text."""
    response = await client.post(url, json=_chat_body(_measure.PROMPT, stream=False))
    _check(response.status_code == 200, f"{url} answered {response.status_code}")
    text: str = response.json()["choices"][0]["message"]["content"]
    return text


async def plain(client: httpx.AsyncClient, url: str) -> str:
    """The plain endpoint's answer to the reference prompt."""
    response = await client.post(url, json=_chat_body(_measure.PROMPT, stream=False))
    _check(response.status_code == 200, f"{url} answered {response.status_code}")
    text: str = response.json()["content"]
    return text


async def _data(response: httpx.Response) -> AsyncIterator[str]:
    """The text of each SSE ``data:`` line."""
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            yield line[5:].strip()


async def streamed_chat(client: httpx.AsyncClient, url: str, prompt: str) -> str:
    """A streamed chat completion, checked whole: the text of its deltas.

    Raises:
        RuntimeError: unless every chunk is a ``chat.completion.chunk``, the last one
            finishes with ``"stop"`` and the stream ends with ``[DONE]``.
    """
    parts: list[str] = []
    finish: object = None
    async with client.stream("POST", url, json=_chat_body(prompt, stream=True)) as response:
        _check(response.status_code == 200, f"{url} answered {response.status_code}")
        data = [line async for line in _data(response)]
    _check(data[-1:] == ["[DONE]"], f"{url} streamed no [DONE]: {data}")
    for line in data[:-1]:
        event = json.loads(line)
        _check(event.get("object") == "chat.completion.chunk", f"{url} streamed {event}")
        for choice in event["choices"]:
            parts.append(choice["delta"].get("content") or "")
            finish = choice["finish_reason"]
    _check(finish == "stop", f"{url} finished with {finish!r}: {data}")
    return "".join(parts)


def agui_answer(events: list[dict[str, Any]], where: str) -> str:
    """The answer of a complete AG-UI run of the reference workload: its text.

    Raises:
        RuntimeError: unless the run started and finished (once each, first and last,
            without a ``RUN_ERROR``), called ``add`` with its ``TOOL_CALL_START``, ``_END``
            and the result ``3``, and every text message it started ended.
    """
    kinds = [event["type"] for event in events]
    _check(kinds[:1] == ["RUN_STARTED"], f"{where}: a run that did not start: {kinds}")
    _check(kinds[-1:] == ["RUN_FINISHED"], f"{where}: a run that did not finish: {kinds}")
    _check(kinds.count("RUN_STARTED") == kinds.count("RUN_FINISHED") == 1, f"{where}: {kinds}")
    _check("RUN_ERROR" not in kinds, f"{where}: {events}")
    calls = {e["toolCallId"]: e["toolCallName"] for e in events if e["type"] == "TOOL_CALL_START"}
    ended = {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_END"}
    results = [(e["toolCallId"], e["content"]) for e in events if e["type"] == "TOOL_CALL_RESULT"]
    _check(list(calls.values()) == ["add"] and set(calls) == ended, f"{where}: calls {events}")
    _check(results == [(next(iter(calls)), "3")], f"{where}: tool results {results}")
    started = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"]
    closed = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_END"]
    _check(started == closed, f"{where}: text messages {kinds}")
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


async def streamed_agui(client: httpx.AsyncClient, url: str, prompt: str) -> str:
    """An AG-UI run, checked whole (`agui_answer`): the text of its messages."""
    async with client.stream("POST", url, json=_agui_body(prompt)) as response:
        _check(response.status_code == 200, f"{url} answered {response.status_code}")
        events = [json.loads(line) async for line in _data(response)]
    return agui_answer(events, url)


async def batch(send: Callable[[], Awaitable[str]], count: int, workers: int) -> float:
    """Seconds for ``count`` requests by ``workers`` concurrent workers; each answer checked."""
    left = [count]

    async def worker() -> None:
        while left[0] > 0:
            left[0] -= 1
            answer = await send()
            _check(answer == _serve_apps.ANSWER, f"answered {answer!r}")

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return time.perf_counter() - started


# -- the measurements -------------------------------------------------------------------------


async def overhead(rounds: int, runs: int) -> dict[str, float]:
    """Per request: the server's CPU time and the wall time, chat completions and plain."""
    async with serving("overhead_app") as server, _client(CONCURRENCY) as client:
        chat_url, plain_url = f"{server.url}/v1/chat/completions", f"{server.url}/plain"
        ways: dict[str, Callable[[], Awaitable[str]]] = {
            "chat": lambda: completion(client, chat_url),
            "plain": lambda: plain(client, plain_url),
        }
        for send in ways.values():
            await batch(send, max(runs // 5, CONCURRENCY), CONCURRENCY)
        cpu = dict.fromkeys(ways, float("inf"))
        wall = dict.fromkeys(ways, float("inf"))
        for _ in range(rounds):
            for name, send in ways.items():
                before = server.cpu_seconds()
                seconds = await batch(send, runs, CONCURRENCY)
                cpu[name] = min(cpu[name], (server.cpu_seconds() - before) / runs * 1e6)
                wall[name] = min(wall[name], seconds / runs * 1e6)
    return {
        "serve_overhead_ratio": cpu["chat"] / cpu["plain"],
        "chat_cpu_us": cpu["chat"],
        "plain_cpu_us": cpu["plain"],
        "serve_wall_ratio": wall["chat"] / wall["plain"],
        "chat_wall_us": wall["chat"],
        "plain_wall_us": wall["plain"],
    }


async def streams(count: int) -> dict[str, Any]:
    """``count`` concurrent streams to a fresh server: all their own? latencies, peak RSS."""
    async with serving("streams_app") as server, _client(count) as client:
        url = f"{server.url}/v1/chat/completions"
        await streamed_chat(client, url, "warm-up")

        async def one(n: int) -> tuple[bool, float]:
            prompt = f"stream {n}"
            started = time.perf_counter()
            text = await streamed_chat(client, url, prompt)
            return text == _serve_apps.echo_answer(prompt), time.perf_counter() - started

        before = server.cpu_seconds()
        started = time.perf_counter()
        done = await asyncio.gather(*(one(n) for n in range(count)))
        wall = time.perf_counter() - started
        cpu = server.cpu_seconds() - before
        peak = server.peak_rss_mb()
    latencies = sorted(seconds for _, seconds in done)
    return {
        "streams_500_ok": all(ok for ok, _ in done) and len(done) == STREAMS,
        "streams_completed": sum(ok for ok, _ in done),
        "streams_p50_ms": statistics.median(latencies) * 1000,
        "streams_p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "streams_peak_rss_mb": peak,
        "streams_wall_s": wall,
        "streams_server_cpu_s": cpu,
    }


async def side_by_side(rounds: int, runs: int, python: str | None) -> dict[str, float]:
    """Requests per second of the reference workload streamed: fncore and Pydantic AI.

    Both through AG-UI (fncore's ``POST /ag-ui``, Pydantic AI's AG-UI adapter), and
    fncore's ``/v1/chat/completions`` streamed as well; the three taken in turn. Without
    ``python`` (no peer), fncore's two alone.
    """
    async with contextlib.AsyncExitStack() as stack:
        ours = await stack.enter_async_context(serving("overhead_app"))
        client = await stack.enter_async_context(_client(CONCURRENCY))
        servers = {"fncore_agui": ours, "fncore_chat_stream": ours}
        ways: dict[str, Callable[[], Awaitable[str]]] = {
            "fncore_agui": lambda: streamed_agui(client, f"{ours.url}/ag-ui", _measure.PROMPT),
            "fncore_chat_stream": lambda: streamed_chat(
                client, f"{ours.url}/v1/chat/completions", _measure.PROMPT
            ),
        }
        if python is not None:
            theirs = await stack.enter_async_context(serving("pydantic_ai_app", python))
            servers["pydantic_ai_agui"] = theirs
            ways["pydantic_ai_agui"] = lambda: streamed_agui(
                client, f"{theirs.url}/ag-ui", _measure.PROMPT
            )
        for send in ways.values():
            await batch(send, max(runs // 5, CONCURRENCY), CONCURRENCY)
        best = dict.fromkeys(ways, 0.0)
        cpu = dict.fromkeys(ways, float("inf"))
        for _ in range(rounds):
            for name, send in ways.items():
                before = servers[name].cpu_seconds()
                best[name] = max(best[name], runs / await batch(send, runs, CONCURRENCY))
                spent = servers[name].cpu_seconds() - before
                cpu[name] = min(cpu[name], spent / runs * 1e6)
    figures = {f"{name}_rps": rps for name, rps in best.items()}
    figures |= {f"{name}_cpu_us": us for name, us in cpu.items()}
    if python is not None:
        figures["fncore_vs_pydantic_ai_rps"] = best["fncore_agui"] / best["pydantic_ai_agui"]
        figures["fncore_vs_pydantic_ai_cpu"] = cpu["pydantic_ai_agui"] / cpu["fncore_agui"]
    return figures


def _peer_version(python: str) -> str | None:
    """``pydantic-ai-slim``'s version under ``python``, if it has it with AG-UI's types."""
    code = (
        "import importlib.metadata as m, pydantic_ai.ui.ag_ui, fncore.serve;"
        "print(m.version('pydantic-ai-slim'))"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def report(figures: _measure.Figures) -> str:
    """The figures as a human-readable table."""
    f = figures
    lines = [
        f"fncore serve on one uvicorn worker ({f['rounds']} rounds of {f['runs']} requests, "
        f"{CONCURRENCY} concurrent; minimum of rounds)",
        f"  /v1/chat/completions {f['chat_cpu_us']:6.0f} µs CPU {f['chat_wall_us']:6.0f} µs wall",
        f"  plain Starlette      {f['plain_cpu_us']:6.0f} µs CPU {f['plain_wall_us']:6.0f} µs wall",
        f"  serve_overhead_ratio  {f['serve_overhead_ratio']:.2f} (target <= 1.3; wall "
        f"{f['serve_wall_ratio']:.2f})",
        f"{STREAMS} concurrent streams: {f['streams_completed']} with their own answer "
        f"(streams_500_ok {f['streams_500_ok']}), p50 {f['streams_p50_ms']:.0f} ms, "
        f"p99 {f['streams_p99_ms']:.0f} ms, peak RSS {f['streams_peak_rss_mb']:.0f} MiB; "
        f"{f['streams_wall_s']:.2f} s in all, {f['streams_server_cpu_s']:.2f} s of it the "
        "server's CPU",
    ]
    lines += [
        "the reference workload streamed, requests per second:",
        f"  fncore POST /ag-ui                {f['fncore_agui_rps']:8.0f} "
        f"({f['fncore_agui_cpu_us']:.0f} µs server CPU a request)",
    ]
    if "pydantic_ai_agui_rps" in f:
        lines.append(
            f"  Pydantic AI {f['pydantic_ai_version']} AG-UI          "
            f"{f['pydantic_ai_agui_rps']:8.0f} ({f['pydantic_ai_agui_cpu_us']:.0f} µs server CPU "
            "a request)"
        )
    lines.append(
        f"  fncore /v1/chat/completions       {f['fncore_chat_stream_rps']:8.0f} "
        f"({f['fncore_chat_stream_cpu_us']:.0f} µs server CPU a request)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures (or say that Pydantic AI is missing)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--peers-python", default=sys.executable)
    parser.add_argument("--no-peers", action="store_true")
    ours, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    version = None if ours.no_peers else _peer_version(ours.peers_python)
    if not ours.no_peers and version is None:
        print(
            f"serve.py: {ours.peers_python} has no pydantic-ai-slim[ag-ui] with fncore[serve]; "
            "give --peers-python a venv of its own (see docs/performance.md), or --no-peers",
            file=sys.stderr,
        )
        return 2

    async def measure(rounds: int, runs: int) -> _measure.Figures:
        figures: dict[str, Any] = {"rounds": rounds, "runs": runs}
        figures |= await overhead(rounds, runs)
        figures |= await streams(STREAMS)
        figures |= await side_by_side(rounds, runs, None if version is None else ours.peers_python)
        if version is not None:
            figures["pydantic_ai_version"] = version
        return figures

    return _measure.main(__doc__, rest, measure, report, rounds=(5, 1), runs=(1000, 100))


if __name__ == "__main__":
    raise SystemExit(main())
