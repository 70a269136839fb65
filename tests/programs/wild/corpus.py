"""The corpus: programs of the shapes learners bring from public TF 1.x tutorials, books
and example repositories, each written for this repository (none is a copy), each run on
tfteach and on TensorFlow by ``runner.run`` and compared by ``runner.differences``.

A ``Program`` says how to run one: its file, its arguments (``{ps_hosts}``,
``{worker_hosts}``, ``{job_name}``, ``{task_index}``, ``{ports}``: free loopback ports,
``{logdir}``: a folder of the run), how many ps and worker tasks it starts as separate
processes, how closely printed numbers must agree, whether placements are compared,
whether CI also runs it live on TensorFlow, and, for a program that needs something tfteach
does not have yet, why (the test is then an expected failure that must flip once it lands).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Program:
    name: str
    follows: str                      # the public program whose shape it follows
    args: tuple = ()
    ps: int = 0                       # separate ps processes ({job_name}=ps)
    workers: int = 0                  # separate worker processes, compared one by one
    ports: int = 0                    # more free ports, as {ports}
    rtol: float = 1e-4
    atol: float = 1e-6
    placements: bool = False
    live_tf: bool = False             # CI runs it on TensorFlow too (keep this to a few)
    pending: str | None = None        # what tfteach lacks for it (an expected failure)
    timeout: float = 120.0
    env: dict = field(default_factory=dict)

    script: str | None = None         # the file, when it is not <name>.py

    @property
    def file(self) -> str:
        return self.script or self.name + ".py"


REPLICA_ARGS = ("--ps_hosts={ps_hosts}", "--worker_hosts={worker_hosts}",
                "--job_name={job_name}", "--task_index={task_index}")

PROGRAMS = [
    Program("mnist_softmax", "tensorflow/examples/tutorials/mnist/mnist_softmax.py",
            live_tf=True),
    Program("mnist_deep", "tensorflow/examples/tutorials/mnist/mnist_deep.py", rtol=2e-3),
    Program("multigpu_basics", "aymericdamien/TensorFlow-Examples "
            "examples/6_MultiGPU/multigpu_basics.py", placements=True),
    Program("gpu_guide", "TF 1.x guide: Using GPUs (tensorflow/docs site/en/guide/using_gpu.md)",
            placements=True, live_tf=True),
    Program("cifar10_multi_gpu_train", "tensorflow/models "
            "tutorials/image/cifar10/cifar10_multi_gpu_train.py", args=("--train_dir={logdir}",),
            rtol=1e-2),
    Program("between_graph_trainer", "TF 1.x guide: Distributed TensorFlow (the trainer "
            "skeleton with MonitoredTrainingSession)", args=REPLICA_ARGS, ps=1, workers=2,
            timeout=180),
    Program("distributed_chapter", "distributed-TensorFlow chapters of public TF 1.x courses "
            "(in-process ClusterSpec/Server, tf.device per task)", args=("{ports}",), ports=3),
    Program("distributed_chapter_placements", "the same chapter, its placement log",
            args=("{ports}",), ports=3, placements=True, script="distributed_chapter.py"),
    Program("summaries_tensorboard", "aymericdamien/TensorFlow-Examples "
            "examples/4_Utils/tensorboard_advanced.py", args=("{logdir}",), rtol=1e-2,
            atol=1e-2),
    Program("save_restore_model", "aymericdamien/TensorFlow-Examples "
            "examples/4_Utils/save_restore_model.py", args=("{logdir}",), rtol=1e-2,
            atol=1e-2),
    Program("moving_average_eval", "tensorflow/models tutorials/image/cifar10 "
            "(cifar10_train.py + cifar10_eval.py: variables_to_restore)", args=("{logdir}",)),
    Program("layers_classifier", "aymericdamien/TensorFlow-Examples "
            "examples/3_NeuralNetworks/convolutional_network.py (tf.layers)",
            env={"TF_USE_LEGACY_KERAS": "1"}, rtol=1e-2, atol=1e-3),
    Program("lr_schedules", "tf.train learning-rate decay functions as TF 1.x models use them"),
    Program("partitioned_embedding", "TF 1.x guide: Distributed TensorFlow / wide-and-deep "
            "(partitioned embeddings over ps tasks)", args=("{ports}", "{logdir}"), ports=3),
    Program("control_flow", "TF 1.x guide: control flow (tf.cond, tf.while_loop)"),
    Program("recurrent_network", "aymericdamien/TensorFlow-Examples "
            "examples/3_NeuralNetworks/recurrent_network.py and dynamic_rnn.py, "
            "bidirectional_rnn.py (tf.nn.rnn_cell, static/dynamic RNNs, map_fn, scan)",
            env={"TF_USE_LEGACY_KERAS": "1"}),
    Program("conv_autoencoder", "aymericdamien/TensorFlow-Examples "
            "examples/3_NeuralNetworks/dcgan.py (tf.layers.conv2d_transpose generator) with "
            "separable, depthwise and 1-D convolutions", env={"TF_USE_LEGACY_KERAS": "1"}),
    Program("csv_input_pipeline", "TF 1.x guide: Reading data (queue-based CSV pipeline)",
            args=("{logdir}",)),
    Program("static_shapes", "model code of TF's CIFAR-10 and MNIST tutorials "
            "(get_shape()[i].value)"),
    Program("mnist_replica", "tensorflow/tools/dist_test/python/mnist_replica.py (async)",
            args=REPLICA_ARGS, ps=1, workers=2, timeout=180),
    Program("mnist_replica_sync", "tensorflow/tools/dist_test/python/mnist_replica.py "
            "--sync_replicas", args=REPLICA_ARGS + ("--sync_replicas",), ps=1, workers=2,
            script="mnist_replica.py",
            timeout=180),
]

BY_NAME = {p.name: p for p in PROGRAMS}
