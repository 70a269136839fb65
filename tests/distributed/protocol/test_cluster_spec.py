"""ClusterSpec behaves as TF 1.x's (server_lib.py), messages included."""
import pytest

from tfteach.distributed.protocol.cluster_spec import ClusterSpec

DENSE = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222", "w2:2222"]}


def test_dense_jobs_keep_their_order_and_count_tasks():
    spec = ClusterSpec(DENSE)
    assert spec.jobs == ["ps", "worker"]
    assert spec.num_tasks("worker") == 3
    assert spec.task_indices("ps") == [0, 1]
    assert spec.task_address("worker", 2) == "w2:2222"


def test_as_dict_round_trips_dense_jobs_as_lists():
    assert ClusterSpec(DENSE).as_dict() == DENSE


def test_sparse_job_matches_tf_example_e3():
    spec = ClusterSpec({"worker": {1: "w1:2222", 3: "w3:2222"}})
    assert spec.num_tasks("worker") == 2
    assert spec.task_indices("worker") == [1, 3]
    assert spec.job_tasks("worker") == [None, "w1:2222", None, "w3:2222"]
    assert spec.as_dict() == {"worker": {1: "w1:2222", 3: "w3:2222"}}


def test_sparse_dict_that_is_dense_comes_back_as_a_list():
    assert ClusterSpec({"w": {1: "b:1", 0: "a:1"}}).as_dict() == {"w": ["a:1", "b:1"]}


def test_unknown_job_raises_tf_value_error():
    with pytest.raises(ValueError, match=r"^No such job in cluster: 'chief'$"):
        ClusterSpec(DENSE).num_tasks("chief")


def test_unknown_task_raises_tf_value_error():
    with pytest.raises(ValueError, match=r"^No task with index 7 in job 'ps'$"):
        ClusterSpec(DENSE).task_address("ps", 7)


def test_a_clusterspec_copies_another_and_compares_equal():
    spec = ClusterSpec(DENSE)
    copy = ClusterSpec(spec)
    assert copy == spec and copy is not spec
    assert ClusterSpec({"ps": ["x:1"]}) != spec


def test_cluster_def_sorts_jobs_and_round_trips():
    spec = ClusterSpec({"worker": ["w0:1"], "chief": ["c:1"]})
    cluster_def = spec.as_cluster_def()
    assert [job.name for job in cluster_def.job] == ["chief", "worker"]
    assert dict(cluster_def.job[1].tasks) == {0: "w0:1"}
    assert ClusterSpec(cluster_def).as_dict() == {"chief": ["c:1"], "worker": ["w0:1"]}


def test_other_types_raise_tf_type_error():
    with pytest.raises(TypeError, match="must be a dictionary mapping one or more job names"):
        ClusterSpec(["localhost:2222"])


def test_tasks_of_a_job_must_be_list_or_dict():
    with pytest.raises(TypeError, match=r"The tasks for job 'ps' must be a list or a "
                                        r"dictionary from integers to strings\."):
        ClusterSpec({"ps": "localhost:2222"})


def test_task_index_must_be_an_integer():
    with pytest.raises(TypeError, match=r"Task index '0' must be an integer"):
        ClusterSpec({"ps": {"0": "localhost:2222"}})


def test_job_name_and_address_must_be_strings():
    with pytest.raises(TypeError, match=r"Job name 3 must be bytes or unicode"):
        ClusterSpec({3: ["a:1"]})
    with pytest.raises(TypeError, match=r"Task address 2222 must be bytes or unicode"):
        ClusterSpec({"ps": [2222]})


def test_bytes_names_are_decoded():
    assert ClusterSpec({b"ps": [b"a:1"]}).as_dict() == {"ps": ["a:1"]}


def test_str_shows_sorted_jobs_like_tf():
    spec = ClusterSpec({"worker": ["w:1"], "ps": ["p:1"]})
    assert str(spec) == "ClusterSpec({'ps': ['p:1'], 'worker': ['w:1']})"


def test_empty_spec_is_falsy():
    assert not ClusterSpec({})
    assert ClusterSpec(DENSE)
