"""The lesson tests' fixtures (``lesson_fixtures``): each test module names its lesson in
``LESSON_NAME`` and its tests run for every language, on ``lesson`` and ``exported``; and
the exercise tests' ``cluster`` (``exercise_ladder``: one LocalCluster per module using it)."""
from __future__ import annotations

from exercise_ladder import cluster  # noqa: F401
from lesson_fixtures import export_file, exported, lang, lesson  # noqa: F401
