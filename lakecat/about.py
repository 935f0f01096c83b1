"""What this lakecat is and runs on: its version, Spark's, each table format's runtime, Java's and Python's.

Everything is read without starting a JVM or importing pyspark: versions come from installed distributions'
metadata, the Maven coordinates lakecat asks for, and the ``release`` file of the Java home lakecat would start
(``java -version`` only when that file is missing). ``lakecat --version`` and ``lakecat doctor`` show it.
"""

from __future__ import annotations

import platform
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import EnvironmentProblemError
from .extras import installed_version
from .formats import all_formats
from .jars import java_executable
from .results import Result

#: lakecat's version when it runs from a checkout that is not installed (else the installed distribution's).
__version__ = "0.2.0"

_RELEASE_VERSION = re.compile(r'^JAVA_VERSION="?([^"\s]+)"?\s*$', re.MULTILINE)
_DASH_VERSION = re.compile(r'version "([^"]+)"')


@dataclass
class VersionsInfo(Result):
    """The versions ``lakecat --version`` prints; ``to_dict()`` is its ``--json`` document.

    Attributes:
        lakecat: lakecat's own version.
        spark: the installed pyspark's version (the Spark that lakecat starts locally).
        formats: each table format's runtime and library, by name: ``iceberg`` (the Iceberg Spark runtime jar
            lakecat asks for), ``pyiceberg``, ``delta`` (delta-spark, whose version is Delta's jar's),
            ``deltalake``; None for what is not installed.
        java: the Java version lakecat's Spark path would run on; None when no Java is found (or it does not say
            its version).
        java_home: where that Java lives (its real path, links resolved); None when no Java is found.
        python: the running Python's version.
    """

    lakecat: str
    spark: str | None
    formats: dict[str, str | None] = field(default_factory=dict)
    java: str | None = None
    java_home: str | None = None
    python: str = field(default_factory=platform.python_version)

    def to_dict(self) -> dict[str, Any]:
        """One flat document: ``lakecat``, ``spark``, then each format's entries (``iceberg``, ``pyiceberg``,
        ``delta``, ``deltalake``), ``java``, ``java_home``, ``python``."""
        return {"lakecat": self.lakecat, "spark": self.spark, **self.formats, "java": self.java,
                "java_home": self.java_home, "python": self.python}  # fmt: skip


def versions_info() -> VersionsInfo:
    """What this lakecat runs on, read without starting a JVM (cheap enough for ``--version``).

    Example:
        >>> import lakecat
        >>> lakecat.versions_info().to_dict()["iceberg"]
        '1.11.0'
    """
    formats: dict[str, str | None] = {}
    for adapter in all_formats():
        formats.update(adapter.runtime_versions())
    java, home = java_version_info()
    return VersionsInfo(lakecat_version(), installed_version("pyspark"), formats, java, home)


def lakecat_version() -> str:
    """The installed lakecat's version (the package's own number in a checkout that is not installed)."""
    return installed_version("lakecat") or __version__


def java_version_info(java: str | None = None) -> tuple[str | None, str | None]:
    """``(version, home)`` of ``java`` (default: the one lakecat's Spark path starts), or ``(None, None)`` when
    there is no Java. The version is the home's ``release`` file's ``JAVA_VERSION``; ``java -version`` answers
    only for a home without one."""
    if java is None:
        try:
            java = java_executable()
        except EnvironmentProblemError:
            return None, None
    binary = Path(java).resolve()
    home = binary.parent.parent
    # a Java 8 JRE inside a JDK keeps its java in <jdk>/jre/bin and the release file in <jdk>
    for candidate in (home, home.parent) if home.name == "jre" else (home,):
        try:
            found = _RELEASE_VERSION.search((candidate / "release").read_text(errors="replace"))
        except OSError:
            continue
        if found:
            return found.group(1), str(candidate)
    try:
        proc = subprocess.run([str(binary), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None, None
    found = _DASH_VERSION.search(proc.stderr + proc.stdout)
    return (found.group(1) if found else None), str(home)
