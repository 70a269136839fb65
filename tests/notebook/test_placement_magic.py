"""%%placement and %tfteach devices, driven in a real Jupyter kernel."""
from __future__ import annotations

from nbkernel import (PLACEMENT_MIME, TIMELINE_MIME, TOWERS, WIDGET_VIEW, data_outputs, kinds,
                      one, stream_text)

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"

PLACEMENT_CELL = "%%placement {flags}\n" + TOWERS


def test_placement_output_carries_json_svg_and_text_with_assigned_devices(kernel):
    outputs = kernel.run(PLACEMENT_CELL.format(flags=""))
    placed = one(outputs, PLACEMENT_MIME)
    assigned = {n["name"]: n["assigned_device"] for n in placed["nodes"]}
    assert assigned == {"Const": GPU0, "Const_1": GPU0, "MatMul": GPU0, "Const_2": GPU1,
                        "Const_3": GPU1, "MatMul_1": GPU1, "AddN": CPU0}
    requested = {n["name"]: n["requested_device"] for n in placed["nodes"]}
    assert requested["AddN"] == "/device:CPU:0" and requested["MatMul_1"] == "/device:GPU:1"
    svg = one(outputs, "image/svg+xml")
    assert svg.lstrip().startswith("<svg") and "MatMul_1" in svg and "GPU:1" in svg
    text = one(outputs, "text/plain")
    assert text.splitlines() == ["Const (Const) -> GPU:0", "Const_1 (Const) -> GPU:0",
                                 "MatMul (MatMul) -> GPU:0", "Const_2 (Const) -> GPU:1",
                                 "Const_3 (Const) -> GPU:1", "MatMul_1 (MatMul) -> GPU:1",
                                 "AddN (AddN) -> CPU:0"]


def test_placement_edges_mark_transfers_with_their_bytes(kernel):
    placed = one(kernel.run(PLACEMENT_CELL.format(flags="")), PLACEMENT_MIME)
    cross = sorted((e["src"], e["dst"], e["bytes"]) for e in placed["edges"] if e["cross_device"])
    assert cross == [("MatMul", "AddN", 16), ("MatMul_1", "AddN", 16)]
    local = [e for e in placed["edges"] if not e["cross_device"]]
    assert {(e["src"], e["dst"]) for e in local} >= {("Const", "MatMul"), ("Const_2", "MatMul_1")}
    assert [d["name"] for d in placed["devices"]] == [CPU0, GPU0, GPU1]
    assert "virtual GPU" in placed["devices"][1]["description"]


def test_placement_view_comes_with_live_controls(kernel):
    outputs = kernel.run(PLACEMENT_CELL.format(flags=""))
    widgets = data_outputs(outputs, WIDGET_VIEW)
    assert len(widgets) == 1 and widgets[0]["model_id"]
    assert "text/plain" not in outputs[-1]["data"]


def test_log_flag_prints_device_mapping_and_placement_lines(kernel):
    printed = stream_text(kernel.run(PLACEMENT_CELL.format(flags="--log")))
    assert printed.startswith("Device mapping:\n" + GPU0 + " -> device: 0")
    assert f"AddN: (AddN): {CPU0}" in printed
    assert f"MatMul_1: (MatMul): {GPU1}" in printed


def test_run_flag_shows_values_and_a_timeline(kernel):
    outputs = kernel.run(PLACEMENT_CELL.format(flags="--run"))
    texts = data_outputs(outputs, "text/plain")
    assert "AddN:0 =\n[[ 44.  56.]\n [ 98. 128.]]" in texts
    timeline = one(outputs, TIMELINE_MIME)
    assert [d["short"] for d in timeline["devices"]] == ["CPU:0", "GPU:0", "GPU:1"]
    ran = {o["name"]: o["device"] for o in timeline["ops"]}
    assert ran["AddN"] == CPU0 and ran["MatMul_1"] == GPU1
    assert sorted(t["tensor"] for t in timeline["transfers"]) == ["MatMul:0", "MatMul_1:0"]
    assert all(o["end_us"] >= o["start_us"] >= 0 for o in timeline["ops"])
    assert timeline["step_us"] >= max(o["end_us"] for o in timeline["ops"])
    assert len(data_outputs(outputs, "image/svg+xml")) == 2


def test_run_without_final_expression_fetches_the_last_ops(kernel):
    outputs = kernel.run("%%placement --run\nx = tf.constant(2.0, name='x')\n"
                         "y = tf.square(x, name='y')")
    assert "y:0 = 4.0" in data_outputs(outputs, "text/plain")


def test_run_initialises_variables_first(kernel):
    outputs = kernel.run("%%placement --run\nv = tf.Variable(4.0, name='v')\n"
                         "w = tf.add(v, 1.0, name='w')\nw")
    assert "w:0 = 5.0" in data_outputs(outputs, "text/plain")


def test_trace_flag_shows_the_timeline_without_values(kernel):
    outputs = kernel.run("%%placement --trace\nx = tf.constant([1.0, 2.0], name='x')\n"
                         "y = tf.square(x, name='y')\ny")
    assert {o["name"] for o in one(outputs, TIMELINE_MIME)["ops"]} == {"x", "y"}
    assert not any("y:0 =" in t for t in data_outputs(outputs, "text/plain"))


def test_model_flag_takes_a_quoted_profile_name_and_marks_its_timeline(kernel):
    outputs = kernel.run('%%placement --trace --model "8x V100 NVLink"\n'
                         "x = tf.constant([1.0, 2.0], name='x')\ny = tf.square(x, name='y')\ny")
    measured, modelled = data_outputs(outputs, TIMELINE_MIME)
    assert "modelled_on" not in measured and modelled["modelled_on"] == "8x V100 NVLink"
    assert {o["name"] for o in modelled["ops"]} == {"x", "y"}


def test_placement_error_is_a_friendly_box_not_a_traceback(kernel):
    outputs = kernel.run("%%placement\nwith tf.device('/gpu:2'):\n    x = tf.constant(1.0)")
    assert "error" not in kinds(outputs)
    text = one(outputs, "text/plain")
    assert text.startswith("InvalidArgumentError while placing the graph:")
    assert "explicitly assigned to /device:GPU:2" in text
    assert "\nHint: this session has CPU:0, GPU:0, GPU:1." in text
    html = one(outputs, "text/html")
    assert "tfteach-error" in html and "<b>Hint:</b>" in html
    assert "Traceback" not in html + text
    assert data_outputs(outputs, PLACEMENT_MIME) == []


def test_soft_flag_sends_a_missing_gpu_to_gpu0(kernel):
    outputs = kernel.run("%%placement --soft\nwith tf.device('/gpu:2'):\n"
                         "    x = tf.constant(1.0, name='x')")
    assert one(outputs, "text/plain") == "x (Const) -> GPU:0"


def test_virtual_gpus_flag_applies_to_that_cell_only(kernel):
    four = kernel.run("%%placement --virtual-gpus 4\nwith tf.device('/gpu:3'):\n"
                      "    x = tf.constant(1.0, name='x')")
    assert one(four, "text/plain") == "x (Const) -> GPU:3"
    assert len(one(four, PLACEMENT_MIME)["devices"]) == 5
    after = kernel.run("%%placement\nx = tf.constant(1.0, name='x')")
    assert len(one(after, PLACEMENT_MIME)["devices"]) == 3


def test_config_expression_is_evaluated_in_the_notebook(kernel):
    kernel.run("my_config = tf.ConfigProto(allow_soft_placement=True, "
               "device_count={'GPU': 1})")
    outputs = kernel.run("%%placement --config my_config\nwith tf.device('/gpu:1'):\n"
                         "    x = tf.constant(1.0, name='x')")
    assert one(outputs, "text/plain") == "x (Const) -> GPU:0"


def test_cell_sees_the_notebook_namespace_and_leaves_the_default_graph_alone(kernel):
    kernel.run("tf.reset_default_graph()\nscale = 10.0")
    outputs = kernel.run("%%placement --run\nx = tf.constant(2.0, name='x') * scale\nx")
    assert any(t.endswith(" = 20.0") for t in data_outputs(outputs, "text/plain"))
    count = kernel.run("print(len(tf.get_default_graph().get_operations()))")
    assert stream_text(count).strip() == "0"
    kept = kernel.run("print(_placement.devices['x'], list(_placement.values.values()))")
    assert stream_text(kept).strip() == "GPU:0 [np.float32(20.0)]"


def test_python_errors_in_the_cell_keep_their_traceback(kernel):
    outputs = kernel.run("%%placement\nx = undefined_name + 1", allow_error=True)
    errors = [o for o in outputs if o["output_type"] == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "NameError"


def test_tfteach_errors_in_ordinary_cells_show_the_box(kernel):
    outputs = kernel.run("sess = tf.Session()\nwith tf.device('/gpu:7'):\n"
                         "    y = tf.constant(2.0)\nsess.run(y)", allow_error=True)
    text = one(outputs, "text/plain")
    assert text.startswith("InvalidArgumentError while running line 4: sess.run(y):")
    assert "Hint:" in text
    assert "error" not in kinds(outputs)


def test_devices_magic_shows_the_table_and_cuda_visible_devices(kernel):
    table = one(kernel.run("%tfteach devices"), "text/plain")
    assert [line.split()[0] for line in table.splitlines()[1:4]] == [CPU0, GPU0, GPU1]
    assert "CUDA_VISIBLE_DEVICES is not set" in table
    kernel.run("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'")
    try:
        masked = one(kernel.run("%tfteach devices"), "text/plain")
    finally:
        kernel.run("del os.environ['CUDA_VISIBLE_DEVICES']")
    assert GPU1 not in masked
    assert masked.splitlines()[-1] == ("CUDA_VISIBLE_DEVICES=1: only those GPUs are visible, "
                                       "renumbered from 0. GPU:0 is virtual GPU 1.")
    html = one(kernel.run("%tfteach devices --virtual-gpus 3"), "text/html")
    assert html.count("<tr>") == 5


def test_magic_mistakes_are_usage_errors(kernel):
    printed = stream_text(kernel.run("%tfteach frobnicate", allow_error=True))
    assert "UsageError" in printed and "usage: %tfteach" in printed
