"""Everything is in pyproject.toml. scrapyd-deploy builds its egg with ``setup.py
bdist_egg`` and would otherwise write a setup.py of its own into the checkout."""

from setuptools import setup

setup()
