"""Build hook: the built madtea.py reports the version of the release tag (see release/versioning.py)."""
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "release"))
import versioning  # noqa: E402

VERSION = versioning.describe(ROOT)


class StampedBuildPy(build_py):
    def build_module(self, module, module_file, package):  # type: ignore[no-untyped-def]
        outfile, copied = super().build_module(module, module_file, package)
        if module == "madtea":
            path = Path(outfile)
            path.write_text(versioning.stamp(path.read_text(encoding="utf-8"), VERSION), encoding="utf-8")
        return outfile, copied


setup(version=VERSION, cmdclass={"build_py": StampedBuildPy})
