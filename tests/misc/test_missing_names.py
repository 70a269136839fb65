"""A TF name tfteach lacks is an AttributeError that names the TF symbol and says how to run
the cell on real TensorFlow; probes of private and dunder names stay quiet and plain."""
import inspect

import pytest

import tfteach as tf

MODULES = {"tf": tf, "tf.nn": tf.nn, "tf.train": tf.train, "tf.layers": tf.layers,
           "tf.gfile": tf.gfile, "tf.app": tf.app}
PRESENT = {"tf": "matmul", "tf.nn": "relu", "tf.train": "Server", "tf.layers": "dense",
           "tf.gfile": "GFile", "tf.app": "run"}


@pytest.mark.parametrize("prefix", MODULES)
def test_a_missing_name_names_the_tf_symbol_and_the_tensorflow_backend(prefix):
    with pytest.raises(AttributeError) as info:
        getattr(MODULES[prefix], "no_such_op")
    text = str(info.value)
    assert f"tfteach has no {prefix}.no_such_op" in text
    assert "%%placement --backend tensorflow" in text and "pip install tensorflow" in text


@pytest.mark.parametrize("prefix", MODULES)
def test_hasattr_is_false_for_missing_names_and_true_for_present_ones(prefix):
    module = MODULES[prefix]
    assert not hasattr(module, "no_such_op")
    assert hasattr(module, PRESENT[prefix])


@pytest.mark.parametrize("name", ["__wrapped__", "__path2__", "_ipython_display_",
                                  "_repr_html_", "_private"])
def test_private_and_dunder_probes_get_the_plain_message(name):
    for module in MODULES.values():
        assert getattr(module, name, None) is None
        with pytest.raises(AttributeError) as info:
            getattr(module, name)
        assert str(info.value) == f"module '{module.__name__}' has no attribute '{name}'"
    assert inspect.unwrap(tf.nn.relu) is tf.nn.relu


def test_from_import_of_a_missing_name_is_an_import_error():
    with pytest.raises(ImportError, match="no_such_op"):
        from tfteach.nn import no_such_op  # noqa: F401
