"""The course as a static website (`make site`, `python -m website.build_site`): execute the solved
notebooks, compose the pages, write the landing pages, render with Sphinx (build_site.py's docstring).

A package run from the checkout's root: Sphinx imports conf.py in the site's own venv (.venv-site),
without the course's packages installed, and finds `website` and `courseinfo` there as well.
"""
