"""Packaging glue that pyproject.toml cannot express (the metadata and dependencies are in pyproject.toml).

The repository keeps data/, app.py and app_pages/ at its root, where a checkout uses them; an installed wheel carries
them inside packages so `servingplan` works from any directory: data/ as `planner/_data` (planner/core/paths.py
looks there first) and app.py + app_pages/ as `ui/_app` (`servingplan app` runs it).
"""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

DATA_FILES = ["*.yaml", "*.md", "models/*.json", "models/*.md", "traces/*", "measurements/*", "measurements/*/*"]


class BuildPy(build_py):
    """`ui._app` is the repository root: of its modules ship only app.py (not this setup.py)."""

    def find_package_modules(self, package, package_dir):
        modules = super().find_package_modules(package, package_dir)
        return [m for m in modules if package != "ui._app" or m[1] == "app"]


setup(
    packages=find_packages(include=["planner", "planner.*", "ui", "ui.*"]) + ["planner._data", "ui._app"],
    package_dir={"planner._data": "data", "ui._app": "."},
    package_data={"planner._data": DATA_FILES, "ui._app": ["app_pages/*.py"]},
    include_package_data=False,
    cmdclass={"build_py": BuildPy},
)
