"""The host/worker tutorial's server: ``python config_server.py TASK`` in the folder of
its config.json, one process per task, each keeping a share of the GPU memory."""
import json
import sys

import tfteach as tf

task_number = int(sys.argv[1])

with open("config.json") as f:
    cluster = tf.train.ClusterSpec(json.load(f))

config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.2))
server = tf.train.Server(cluster, job_name="worker", task_index=task_number, config=config)

print("Starting server #{}".format(task_number), flush=True)

server.start()
server.join()
