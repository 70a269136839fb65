"""The ``exported`` fixture: the lesson a test module names in ``LESSON``, as nbconvert's HTML."""
from __future__ import annotations

import pytest
from lesson_tools import export_html


@pytest.fixture(scope="module")
def exported(request, tmp_path_factory) -> str:
    """The HTML page of ``request.module.LESSON`` with its stored outputs, once per module."""
    return export_html(request.module.LESSON, tmp_path_factory.mktemp("export")).read_text()
