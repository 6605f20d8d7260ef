"""Build hook: the built madtea.py reports the version of the release tag (see release/versioning.py),
and the ``madtea`` command is madtea's own launcher on POSIX, pip's entry-point wrapper on Windows."""
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "release"))
import versioning  # noqa: E402

VERSION = versioning.describe(ROOT)


class StampedBuildPy(build_py):
    def build_module(self, module: str, module_file: str, package: str) -> tuple[str, bool]:
        outfile, copied = super().build_module(module, module_file, package)
        if module == "madtea":
            path = Path(outfile)
            path.write_text(versioning.stamp(path.read_text(encoding="utf-8"), VERSION), encoding="utf-8")
        return outfile, copied


def command_kwargs(os_name: str = os.name) -> dict[str, object]:
    """How the wheel provides the ``madtea`` command, for the platform it is built on.

    POSIX: the script ``bin/madtea`` (pip points its first line at the install's Python); pip's
    generated wrapper would import ``re`` first, a large part of the hook's time. Windows: an entry
    point, since pip makes a ``madtea.exe`` only for those.
    """
    if os_name == "nt":
        return {"entry_points": {"console_scripts": ["madtea = madtea:main"]}}
    return {"scripts": ["bin/madtea"], "entry_points": {}}  # none, but set: pyproject.toml declares it dynamic


if __name__ == "__main__":
    setup(version=VERSION, cmdclass={"build_py": StampedBuildPy}, **command_kwargs())
