"""The lesson tests' fixtures (``lesson_fixtures``): each test module names its lesson in
``LESSON_NAME`` and its tests run for every language, on ``lesson`` and ``exported``."""
from __future__ import annotations

from lesson_fixtures import export_file, exported, lang, lesson  # noqa: F401
