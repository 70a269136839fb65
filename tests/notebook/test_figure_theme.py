"""After %load_ext tfteach, a learner's own matplotlib figures read on light and dark themes."""
from __future__ import annotations

import base64
import io

from nbkernel import one


def test_a_pyplot_figure_after_load_ext_is_transparent_with_grey_ink(kernel):
    from matplotlib.image import imread

    outputs = kernel.run("%load_ext tfteach\nimport matplotlib.pyplot as plt\n"
                         "plt.plot([1, 2, 3]); plt.title('loss'); plt.show()")
    pixels = imread(io.BytesIO(base64.b64decode(one(outputs, "image/png"))))
    assert pixels.shape[2] == 4 and pixels[0, 0, 3] == 0, "transparent, not a white slab"
    h, w = pixels.shape[:2]
    assert pixels[int(h * 0.3), int(w * 0.3), 3] == 0, "the axes too (off the rising line)"
