"""Lesson 7 passes nbval, leaves no task process behind, and its HTML export shows the cluster,
in every language."""
from __future__ import annotations

import re

import nbformat
import pytest
from lesson_tools import (assert_passes_nbval, assert_stopped_every_task, correct, output_texts,
                          plural_pattern, shown, stored_outputs, svgs, timeline_transfers)

from tfteach import i18n
from tfteach.i18n import tr

LESSON_NAME = "07_local_cluster.ipynb"

PLACEMENT_MIME = "application/vnd.tfteach.placement+json"
TIMELINE_MIME = "application/vnd.tfteach.timeline+json"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(lesson, tmp_path):
    assert_stopped_every_task(assert_passes_nbval(lesson, tmp_path))


def test_export_shows_hello_and_placements_boxed_by_task(exported, lang):
    assert "Hello, distributed TensorFlow!" in exported
    graphs = [s for s in svgs(exported) if "/job:worker/task:1" in s]
    assert len(graphs) >= 4, "the placement pictures of the cluster runs"
    assert any("/job:host/task:0" in s for s in graphs), "the CLI workers + host run"
    assert "worker 0 exited with code 0" in exported and "worker 1 exited with code 0" in exported
    assert shown(exported, correct("the placement", lang))
    assert shown(exported, tr("Stopped the cluster", lang=lang))


def test_try_it_on_tensorflow_runs_the_example_on_tensorflow_servers(lesson):
    """The text: TF's runtime puts the product on worker 0, the log on worker 1 and the sum on
    worker 0, and the tensor crossing tasks is a _Send/_Recv transfer."""
    outputs = stored_outputs(lesson, "%%placement --backend tensorflow --run")
    placed = next(o["data"][PLACEMENT_MIME] for o in outputs
                  if PLACEMENT_MIME in o.get("data", {}))
    where = {n["name"]: n["assigned_device"].split("/device:")[0] for n in placed["nodes"]}
    assert where["product"] == where["total"] == "/job:worker/replica:0/task:0"
    assert where["logged"] == "/job:worker/replica:0/task:1"
    assert "total:0 = [[15.65396]]" in output_texts(outputs)
    timeline = next(o["data"][TIMELINE_MIME] for o in outputs
                    if TIMELINE_MIME in o.get("data", {}))
    assert [(t["tensor"], t["src_device"].split("/device:")[0]) for t in timeline["transfers"]] \
        == [("logged:0", "/job:worker/replica:0/task:1")]


def test_one_4_byte_tensor_crosses_tasks_then_one_from_each_worker_to_the_host(lesson, lang):
    """The text: only the 4-byte `logged` crosses the network (a red, byte-labelled arrow);
    with the host as master, two tensors cross, one from each worker."""
    first = stored_outputs(lesson, "%%placement --run --target $target")
    transfers = [e for e in next(o["data"][PLACEMENT_MIME] for o in first
                                 if PLACEMENT_MIME in o.get("data", {}))["edges"]
                 if e["cross_device"]]
    assert [(e["src"], e["bytes"]) for e in transfers] == [("logged", 4)]
    svg = next(o["data"]["image/svg+xml"] for o in first if PLACEMENT_MIME in o.get("data", {}))
    assert svg.count(f'fill="#d0402f"> {i18n.size(4, lang)}</text>') == 1
    text = output_texts(stored_outputs(lesson, "%%placement --run --target $host_target"))
    assert sorted(timeline_transfers(text, lang)) == [
        ("logged:0", "worker:1/GPU:0", "host:0/GPU:0", i18n.size(4, lang)),
        ("product:0", "worker:0/GPU:0", "host:0/GPU:0", i18n.size(4, lang))]
    assert "total (Add) -> host:0/GPU:0" in text
    assert re.search(plural_pattern("{n} transfer", "{n} transfers", 2, lang), text)


def test_the_two_task_local_program_computes_238_with_y2_on_task_1(lesson):
    """The tutorial's {"local": [...]} program as written: y2's ops on task 1, 238."""
    outputs = stored_outputs(lesson, 'server = tf.train.Server(cluster, job_name="local"')
    assert [o["text"] for o in outputs if o.get("name") == "stdout"] == ["238\n"]
    text = output_texts(stored_outputs(lesson, "for op in tf.get_default_graph().get_operations()"))
    assert "sub    asked for /job:local/task:1" in text
    assert "add_1  asked for /job:local/task:0" in text
    assert "task 1 exited with code 0" in text


def test_the_config_json_programs_start_two_servers_and_the_client_prints_238(lesson):
    """config_server.py (GPUOptions on the Server) twice, then config_client.py: 238."""
    text = output_texts(stored_outputs(lesson, "config_servers = [run_in_folder("))
    assert "worker 0: Starting server #0" in text and "worker 1: Starting server #1" in text
    assert "config_client.py printed: 238" in text and "client exit code: 0" in text
    server_source = next(c.source for c in nbformat.read(lesson, as_version=4).cells
                         if c.source.startswith("%%writefile $folder/config_server.py"))
    assert "gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.2)" in server_source
    assert "task_index=task_number, config=config" in server_source
