"""%%placement --backend tensorflow and --backend compare, driven in a real Jupyter kernel.

The TensorFlow side is real ``tensorflow.compat.v1``: these tests skip without it, except the
one that checks the error a kernel without TensorFlow gives (absence simulated there).
"""
from __future__ import annotations

import re

import pytest
from nbkernel import PLACEMENT_MIME, TIMELINE_MIME, TOWERS, data_outputs, one, stream_text

LOCAL = "/job:localhost/replica:0/task:0/device:"
LOG_LINE = re.compile(r"^([^\s:]+): \((\w+)\): (/job:\S+)$", re.MULTILINE)

def tf_or_skip() -> None:
    pytest.importorskip("tensorflow", reason="TensorFlow is not installed "
                        "(pip install -e '.[conformance]')")


def texts(outputs: list) -> str:
    return "\n".join(data_outputs(outputs, "text/plain")) + stream_text(outputs)


@pytest.mark.conformance
def test_bundle_places_every_node_where_tensorflows_log_puts_it(kernel):
    tf_or_skip()
    outputs = kernel.run("%%placement --backend tensorflow --log --gpus-as-cpus\n" + TOWERS)
    logged = {name: device for name, _, device in LOG_LINE.findall(stream_text(outputs))}
    placed = one(outputs, PLACEMENT_MIME)
    assigned = {n["name"]: n["assigned_device"] for n in placed["nodes"]}
    assert assigned == logged
    assert assigned["MatMul_1"] == LOCAL + "CPU:2" and assigned["AddN"] == LOCAL + "CPU:0"
    stand_in = {d["name"]: d["description"] for d in placed["devices"]}[LOCAL + "CPU:1"]
    assert stand_in == "TensorFlow CPU standing in for tfteach's GPU:0"


@pytest.mark.conformance
def test_run_shows_tensorflows_values_and_its_send_recv_transfers(kernel):
    tf_or_skip()
    outputs = kernel.run("%%placement --backend tensorflow --run --gpus-as-cpus\n" + TOWERS)
    assert "AddN:0 =\n[[ 44.  56.]\n [ 98. 128.]]" in texts(outputs)
    timeline = one(outputs, TIMELINE_MIME)
    moved = sorted((t["tensor"], t["src_device"][-5:], t["dst_device"][-5:], t["bytes"])
                   for t in timeline["transfers"])
    assert moved == [("MatMul:0", "CPU:1", "CPU:0", 16), ("MatMul_1:0", "CPU:2", "CPU:0", 16)]


@pytest.mark.conformance
def test_a_gpu_tensorflow_lacks_is_named_with_what_to_do(kernel):
    tf_or_skip()
    shown = texts(kernel.run("%%placement --backend tensorflow\n" + TOWERS))
    assert "Note: TensorFlow on this machine has no GPU:0, GPU:1 (it has CPU:0)" in shown
    assert "--soft" in shown and "--gpus-as-cpus" in shown
    assert "InvalidArgumentError while placing the graph" in shown


@pytest.mark.conformance
def test_compare_reports_the_ops_tensorflow_placed_elsewhere(kernel):
    tf_or_skip()
    shown = texts(kernel.run("%%placement --backend compare --soft --run\n" + TOWERS))
    assert "tfteach and TensorFlow differ (6 differences):" in shown
    assert "placement of MatMul_1: tfteach GPU:1, TensorFlow CPU:0" in shown
    assert "value of" not in shown and "error:" not in shown


@pytest.mark.conformance
def test_compare_reports_agreement_when_cpus_stand_in_for_the_gpus(kernel):
    tf_or_skip()
    shown = texts(kernel.run("%%placement --backend compare --run --gpus-as-cpus\n" + TOWERS))
    assert ("tfteach and TensorFlow agree: 7 ops on the same devices, 1 fetched value the "
            "same, no errors.") in shown


@pytest.mark.conformance
def test_compare_reports_an_error_only_tensorflow_raises(kernel):
    tf_or_skip()
    shown = texts(kernel.run("%%placement --backend compare\nwith tf.device('/gpu:1'):\n"
                             "    x = tf.constant(1.0) * 2.0"))
    assert "tfteach and TensorFlow differ (1 difference):" in shown
    assert "error: tfteach raised nothing; TensorFlow raised InvalidArgumentError" in shown


def test_without_tensorflow_the_backend_says_how_to_install_it(kernel):
    hide = ("import sys\n_hidden = {k: sys.modules.pop(k) for k in list(sys.modules)\n"
            "           if k == 'tensorflow' or k.startswith('tensorflow.')}\n"
            "sys.modules['tensorflow'] = None")
    kernel.run(hide)
    try:
        shown = texts(kernel.run("%%placement --backend tensorflow\nx = tf.constant(1.0)"))
    finally:
        kernel.run("del sys.modules['tensorflow']\nsys.modules.update(_hidden)")
    assert "FailedPreconditionError while starting TensorFlow" in shown
    assert 'pip install "tfteach[conformance]"' in shown
