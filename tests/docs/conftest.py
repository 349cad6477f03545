"""The browser test of the documentation site runs only from scripts/docs.sh, which builds the site
and sets PUFFER_DOCS_SITE to it; the regular test command does not collect it."""
import os

collect_ignore_glob = [] if os.environ.get("PUFFER_DOCS_SITE") else ["*.py"]   # the tests and the CDP client
