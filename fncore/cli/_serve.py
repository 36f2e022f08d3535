"""``fncore serve``: the chosen agent behind OpenAI's chat-completions API, run by uvicorn.

The agent and uvicorn share the command's event loop. uvicorn stops gracefully on
``SIGTERM`` and ``SIGINT``: ``SIGTERM`` then ends the command with status 0, ``SIGINT``
(Ctrl-C) as an interrupt. uvicorn's own log records print as one line each, never with a
traceback. Without ``[serve] keys`` only a loopback address is served; with keys, any.
After ``SIGTERM`` the server stops accepting, and requests in flight have
``[serve] drain_seconds`` to finish (uvicorn's ``timeout_graceful_shutdown``). With
``--durable`` (``[serve] durable = true``) the app takes durable runs, and the server is a
worker of the ``[durable]`` queue: the runtime launches with the app, on the same loop.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import signal
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from fncore import ConfigError
from fncore._config_secrets import reveal
from fncore._distribution import install_hint
from fncore.cli._commands import chosen_agent, opened, to_stderr
from fncore.cli._errors import CommandFailed
from fncore.settings import DurableSettings

if TYPE_CHECKING:
    import socket

    from starlette.applications import Starlette

    from fncore.container import Container
    from fncore.durable import DurableRuntime
    from fncore.runtime import Agent
    from fncore.serve import ServeSettings

_SERVE_MODULES = frozenset({"uvicorn", "starlette", "sse_starlette"})
"""The top-level modules the ``serve`` extra brings."""

LOOPBACK_NAMES = frozenset({"localhost"})
"""Host names taken as this machine, besides the loopback addresses."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only: ``localhost``, ``127.0.0.0/8`` or ``::1``.

    Example:
        >>> is_loopback("127.0.0.2"), is_loopback("::1"), is_loopback("0.0.0.0")
        (True, True, False)
    """
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class _OneLine(logging.Handler):
    """Prints each uvicorn record as one line on stderr: its message, and its error's."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = " ".join(record.getMessage().split())
            if record.exc_info and record.exc_info[1] is not None:
                error = record.exc_info[1]
                text = f"{text}: {type(error).__name__}: {' '.join(str(error).split())}"
            to_stderr(f"[serve] {text}")
        except Exception:
            self.handleError(record)


@contextmanager
def _uvicorn_lines() -> Iterator[None]:
    """Print uvicorn's warnings and errors as `_OneLine` lines while the block runs."""
    logger = logging.getLogger("uvicorn")
    handler = _OneLine(logging.WARNING)
    propagated = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.propagate = propagated
        logger.removeHandler(handler)


@contextmanager
def _sigterm_ends_cleanly() -> Iterator[None]:
    """Make ``SIGTERM`` do nothing itself while the block runs.

    uvicorn catches it and shuts down, then raises it again with the handler it found,
    this one, so the command ends normally rather than being killed.
    """
    previous = signal.signal(signal.SIGTERM, lambda _signum, _frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _serve_modules() -> tuple[Any, Any]:
    """The ``uvicorn`` module and `fncore.serve.create_app`.

    Raises:
        ConfigError: if the ``serve`` extra is not installed.
    """
    try:
        import uvicorn

        from fncore.serve import create_app
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] not in _SERVE_MODULES:
            raise
        msg = f"fncore serve needs the serve extra: {install_hint('serve')}"
        raise ConfigError(msg) from None
    return uvicorn, create_app


async def _run(app: Starlette, uvicorn: Any, host: str, port: int, drain: float) -> None:
    class Server(uvicorn.Server):  # type: ignore[misc]
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                urls = ", ".join(_url(s) for server in self.servers for s in server.sockets)
                to_stderr(f"serving on {urls} (OpenAI API under /v1; Ctrl-C stops)")

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        lifespan="on",
        timeout_graceful_shutdown=drain,
    )
    try:
        await Server(config).serve()
    except SystemExit:  # uvicorn's way to fail at startup; its line said why
        msg = f"could not serve on {host} port {port}"
        raise CommandFailed(msg) from None


def _settings(serve: Any) -> ServeSettings:
    """The app's settings from the ``[serve]`` section (``container.config.serve``).

    Raises:
        ConfigError: for keys that could not work (the message shows none of them).
    """
    from fncore.serve import ServeSettings

    try:
        return ServeSettings(
            model_name=serve.model_name(),
            max_body_bytes=serve.max_body_bytes(),
            max_messages=serve.max_messages(),
            runs_kept=serve.runs_kept(),
            keys=serve.keys() or {},
            cors_origins=tuple(serve.cors_origins() or ()),
        )
    except ValueError as exc:
        msg = f"config key 'serve': {str(exc).removeprefix('ServeSettings.')}"
        raise ConfigError(msg) from None


def _durable(container: Container, agent: Agent[Any]) -> DurableRuntime:
    """The runtime of the served agent's durable runs, from the ``[durable]`` section.

    Raises:
        ConfigError: without the ``durable`` extra.
    """
    try:
        from fncore.durable import DurableRuntime
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] != "dbos":
            raise
        msg = f"fncore serve --durable needs the durable extra: {install_hint('durable')}"
        raise ConfigError(msg) from None
    section = reveal(container.config.durable() or {})
    return DurableRuntime([agent], DurableSettings.model_validate(section))


def serve_command(
    *,
    config: str | None,
    settings: Mapping[str, Any],
    host: str | None = None,
    port: int | None = None,
    ref: str | None = None,
    durable: bool | None = None,
) -> None:
    """``fncore serve``: serve the chosen agent (`chosen_agent`) until a signal stops it.

    ``host``, ``port`` and ``durable`` (the flags) win over ``[serve] host``, ``port`` and
    ``durable``.

    Raises:
        ConfigError: for bad configuration, a host that is not a loopback address, or
            without the ``serve`` extra.
        RegistrationError: if the stack cannot be built.
        CommandFailed: if ``ref`` gives no agent, or uvicorn could not start.
    """
    uvicorn, create_app = _serve_modules()

    async def serve_then_close() -> None:
        container, agent = await chosen_agent(ref, config, settings)
        chosen_host: str = host or container.config.serve.host()
        chosen_port: int = container.config.serve.port() if port is None else port
        serve = container.config.serve
        served = _settings(serve)
        if not served.keys and not is_loopback(chosen_host):
            msg = (
                f"will not serve on {chosen_host!r}: serving beyond this machine needs "
                "API keys; set [serve] keys (or FNCORE_SERVE__KEYS__TENANT=KEY), or use "
                "127.0.0.1, ::1 or localhost"
            )
            raise ConfigError(msg)
        runtime = _durable(container, agent) if (durable or serve.durable()) else None
        async with opened(container, agent):
            app = create_app(agent, served, durable=runtime)
            await _run(app, uvicorn, chosen_host, chosen_port, serve.drain_seconds())

    with _uvicorn_lines(), _sigterm_ends_cleanly():
        asyncio.run(serve_then_close())
