"""Real TensorFlow's ``compat.v1`` in graph mode, the oracle of the conformance tests.

``from tf_oracle import tf1`` skips the importing test module where TensorFlow is not
installed (``pip install -e '.[conformance]'``)."""
import pytest

tf_real = pytest.importorskip("tensorflow", reason="TensorFlow is not installed "
                              "(pip install -e '.[conformance]')")
tf1 = tf_real.compat.v1
tf1.disable_v2_behavior()
