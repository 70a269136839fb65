"""The shape every tfteach picture shares: a static MIME bundle plus live controls.

A view (placement graph, device timeline) holds its data and two view settings, ``color_by``
and ``show_transfers``. Its ``_repr_mimebundle_`` returns ``(data, metadata)``: ``data`` holds
the custom JSON MIME type that the JupyterLab extension draws interactively, plus the static
form that nbconvert, GitHub and nbval see (``image/svg+xml`` and a deterministic
``text/plain``), both drawn with the current settings; ``metadata[MIME]`` carries the settings
(``{"color_by", "show_transfers"}``) for the extension's renderer, so every control has a
visible effect in every frontend. The settings travel in metadata, not in the JSON payload, so
the payload of a saved notebook does not depend on them (nbval ignores output metadata).

``show()`` displays that bundle under a display id and, inside a kernel with ipywidgets,
a row of controls below it that redraws the bundle in place (``update_display_data``), so
the output saved in the notebook stays a static picture. ``widget()`` builds a
self-contained ipywidget (controls above an inline SVG) for dashboards.
Invariants: ``color_by`` is one of ``COLOR_CHOICES``' values; ipywidgets is imported only
when controls are built.
"""
from __future__ import annotations

from typing import Any, Callable

from tfteach.i18n import language, tr
from tfteach.notebook.fonts import embed_cjk_font
from tfteach.notebook.style import kernel_running


class View:
    """Base class: subclasses set ``MIME``, ``COLOR_CHOICES`` and the three renderers."""

    MIME = ""
    COLOR_CHOICES: tuple[tuple[str, str], ...] = (("device", "device"),)

    def __init__(self) -> None:
        self.color_by = self.COLOR_CHOICES[0][1]
        self.show_transfers = True
        self._handle: Any = None
        self._controls: Any = None

    # -- what subclasses provide ------------------------------------------------------
    def payload(self) -> dict:
        """The custom MIME JSON."""
        raise NotImplementedError

    def svg(self, color_by: str | None = None, show_transfers: bool | None = None) -> str:
        raise NotImplementedError

    def text(self) -> str:
        raise NotImplementedError

    def extra_controls(self) -> list:
        """More ipywidgets for the controls row (e.g. a save button)."""
        return []

    # -- static form ------------------------------------------------------------------
    def settings(self) -> dict:
        """The view settings as the extension's renderer reads them from output metadata."""
        return {"color_by": self.color_by, "show_transfers": self.show_transfers}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None
                          ) -> tuple[dict, dict]:
        data = {"image/svg+xml": embed_cjk_font(self.svg()), "text/plain": self.text(),
                self.MIME: self.localized_payload()}
        return data, {self.MIME: self.settings()}

    def localized_payload(self) -> dict:
        """The MIME JSON, plus ``lang`` when the learner's language is not English: the
        extension writes its labels in that language, whatever JupyterLab's own is."""
        lang = language()
        return self.payload() if lang == "en" else {**self.payload(), "lang": lang}

    def __repr__(self) -> str:
        return self.text()

    # -- live form --------------------------------------------------------------------
    def set_view(self, color_by: str | None = None, show_transfers: bool | None = None) -> None:
        """Change the settings and redraw a shown view in place."""
        if color_by is not None:
            allowed = [v for _, v in self.COLOR_CHOICES]
            if color_by not in allowed:
                raise ValueError(f"color_by must be one of {allowed}, got {color_by!r}")
            self.color_by = color_by
        if show_transfers is not None:
            self.show_transfers = bool(show_transfers)
        if self._handle is not None:
            self._handle.update(self)

    def show(self) -> None:
        """Display the static bundle, plus live controls when in a kernel with widgets."""
        from IPython.display import display

        self._handle = display(self, display_id=True)
        if kernel_running() and _widgets_available():
            self._controls = self.controls(self.set_view)
            display(widget_only_bundle(self._controls), raw=True)

    def controls(self, on_change: Callable[..., None]) -> Any:
        """An ipywidgets row: colour-by buttons, a transfers checkbox, extras."""
        import ipywidgets as w

        color = w.ToggleButtons(options=[(tr(label), key) for label, key in self.COLOR_CHOICES],  # i18n: dynamic
                                value=self.color_by, description=tr("Colour by"),
                                style={"button_width": "80px"})
        transfers = w.Checkbox(value=self.show_transfers, description=tr("show transfers"),
                               indent=False)
        color.observe(lambda change: on_change(color_by=change["new"]), names="value")
        transfers.observe(lambda change: on_change(show_transfers=change["new"]),
                          names="value")
        return w.HBox([color, transfers, *self.extra_controls()])

    def widget(self) -> Any:
        """A self-contained ipywidget: the controls above the SVG picture."""
        import ipywidgets as w

        picture = w.HTML(value=_scroll_box(embed_cjk_font(self.svg())))

        def redraw(**settings: Any) -> None:
            self.set_view(**settings)
            picture.value = _scroll_box(embed_cjk_font(self.svg()))

        return w.VBox([self.controls(redraw), picture])


def _scroll_box(svg: str) -> str:
    return f'<div style="overflow:auto;max-width:100%">{svg}</div>'


def _widgets_available() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def widget_only_bundle(widget: Any) -> dict:
    """A widget's MIME bundle without its repr text, so exported HTML (where the widget
    cannot run) shows nothing rather than ``HBox(children=...)``."""
    bundle = widget._repr_mimebundle_()
    bundle.pop("text/plain", None)
    return bundle
