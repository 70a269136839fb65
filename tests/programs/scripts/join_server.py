"""One task of a cluster, started from the command line, serving until it is killed.

Usage: join_server.py CLUSTER_JSON JOB TASK
"""
import json
import sys

import tfteach as tf

cluster = tf.train.ClusterSpec(json.load(open(sys.argv[1])))
server = tf.train.Server(cluster, job_name=sys.argv[2], task_index=int(sys.argv[3]))
print("Starting server /job:{}/task:{}".format(sys.argv[2], sys.argv[3]), flush=True)
server.join()
