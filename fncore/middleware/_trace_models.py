"""What `trace` records of each model it sees, made once: span names and attribute sets.

A model is known by its provider, its name and its endpoint's URL, read again at each
call, so a model whose name changes, or a fallback model, is known as another one. What
is made for it once, a ``chat`` span's name and its attributes, the attribute sets of its
measurements, is handed to the OpenTelemetry SDK as it is: the SDK reads these and never
changes them (it copies a span's attributes, and keys a measurement by its set's items).
"""

from __future__ import annotations

from typing import Any

from fncore.core import Model, ModelRequest, ModelSettings
from fncore.middleware import _genai as g

MetricSets = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]
"""The attributes of one model's measurements: in all, and of its input and output tokens."""

_NO_EXTRA = ModelSettings().extra
"""The ``extra`` of settings that give none: one shared, empty, read-only mapping."""

MAX_KNOWN = 256
"""The most models (or, per model, the most answering models) known at once; past it, the
memo starts afresh."""


class ModelFacts:
    """What `trace` records of one model (provider, name, server), made once.

    Args:
        provider: ``gen_ai.provider.name``.
        model: ``gen_ai.request.model``.
        server: ``server.address`` and ``server.port``, if the model has an endpoint.
    """

    __slots__ = (
        "_last_first",
        "_metrics",
        "chat",
        "described",
        "first",
        "model",
        "provider",
        "server",
    )

    def __init__(self, provider: str, model: str, server: tuple[tuple[str, Any], ...]) -> None:
        self.provider = provider
        self.model = model
        self.server = server
        self.chat = f"{g.CHAT} {model}"
        """The name of the model's ``chat`` spans."""
        self.described: dict[str, Any] = {g.PROVIDER_NAME: provider, g.REQUEST_MODEL: model}
        """What a run's span says of the model its first call went to."""
        self.first = self.started(1, {})
        """The attributes of a first attempt with no setting that the conventions name."""
        self._metrics: dict[str, MetricSets] = {}
        self._last_first: tuple[ModelSettings, bool, dict[str, Any]] | None = None
        """The last settings `first_for` was asked for, whether streamed, and its answer."""

    def first_for(self, request: ModelRequest, streaming: bool) -> dict[str, Any]:
        """The attributes of a first attempt at ``request`` (content aside): not to be changed.

        `first` when the request has no setting the conventions name; else made once for
        the last settings seen: a request's settings are one frozen object, handed on from
        call to call, so while they are the same object (and streamed or not as before),
        so are the attributes. Settings with an ``extra`` of their own are read at each
        call (the mapping given there may change).
        """
        settings = request.settings
        last = self._last_first
        if last is not None and last[0] is settings and last[1] is streaming:
            return last[2]
        named = g.request_attributes(request, streaming)
        attributes = self.started(1, named) if named else self.first
        if settings.extra is _NO_EXTRA:
            self._last_first = (settings, streaming, attributes)
        return attributes

    def started(self, attempt: int, settings: dict[str, Any]) -> dict[str, Any]:
        """The attributes a ``chat`` span starts with (content aside): a new dict.

        Args:
            attempt: ``fncore.attempt`` (0: a call that no attempt reached the model for).
            settings: The request's settings, as `g.request_attributes` gives them.
        """
        attributes: dict[str, Any] = {
            g.OPERATION_NAME: g.CHAT,
            g.PROVIDER_NAME: self.provider,
            g.REQUEST_MODEL: self.model,
            g.ATTEMPT: attempt,
            **settings,
        }
        attributes.update(self.server)
        return attributes

    def metrics(self, answered_by: str) -> MetricSets:
        """The attributes of the measurements of a call ``answered_by`` answered ("": none)."""
        found = self._metrics.get(answered_by)
        if found is None:
            attributes: dict[str, Any] = {
                g.OPERATION_NAME: g.CHAT,
                g.PROVIDER_NAME: self.provider,
                g.REQUEST_MODEL: self.model,
                **dict(self.server),
            }
            if answered_by:
                attributes[g.RESPONSE_MODEL] = answered_by
            found = (
                attributes,
                {**attributes, g.TOKEN_TYPE: "input"},
                {**attributes, g.TOKEN_TYPE: "output"},
            )
            if len(self._metrics) >= MAX_KNOWN:
                self._metrics.clear()
            self._metrics[answered_by] = found
        return found


class Models:
    """The `ModelFacts` of the models one `trace` has seen (at most `MAX_KNOWN`)."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[tuple[str, str, str | None], ModelFacts] = {}

    def of(self, model: Model) -> ModelFacts:
        """The facts of ``model`` as it is now: its provider, name and endpoint read again."""
        url = getattr(getattr(model, "endpoint", None), "url", None)
        if not isinstance(url, str):
            url = None
        # `g.provider_of` and `g.model_name`, inline: this runs at every model call
        provider = getattr(model, "provider", None)
        if not isinstance(provider, str) or not provider:
            provider = type(model).__module__
        try:
            name = str(model.name)
        except Exception:
            name = type(model).__name__
        key = (provider, name, url)
        found = self._known.get(key)
        if found is None:
            server = () if url is None else g.server_at(url)
            found = ModelFacts(key[0], key[1], server)
            if len(self._known) >= MAX_KNOWN:
                self._known.clear()
            self._known[key] = found
        return found
