"""The JupyterLab extension's labels in Korean, Chinese and Russian, for JupyterLab's
``jupyterlab.locale`` entry point (``tfteach = "tfteach.notebook.lab_locale"`` in
pyproject.toml).

JupyterLab's server finds this module through the entry point and reads
``locale/<ll_CC>/LC_MESSAGES/tfteach.json`` next to it (Jed JSON of the ``tfteach``
domain) for the language chosen in Settings > Language; the extension's
``trans.__`` / ``trans._n`` calls look their text up there. The JSON files are written by
``labextension/locale/build.py`` from ``labextension/locale/<lang>.po``: edit the .po files,
never the JSON. Holds no code.
"""
