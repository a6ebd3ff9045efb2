# SPDX-License-Identifier: MIT
"""Generated files are rewritten only when their content changes, so that make does not
rebuild what depends on them (kconfig.py, genpolicies.py, amalgamate.py)."""
import os


def write_if_changed(path, text, key=None):
    """Write text to path unless the file holds it already; key(t), when given, is what is
    compared (a generated date, say, left out)."""
    key = key or (lambda t: t)
    try:
        with open(path) as f:
            if key(f.read()) == key(text):
                return
    except OSError:
        pass
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
