"""How a revision expression names a release (pypi:, wheel:, sdist:) rather than a commit.

Light on purpose: telling the two apart needs none of the network code of
`harness.releases.release`, which is imported only when a release is named.
"""

from __future__ import annotations

import re

FORM = re.compile(r"^(pypi|wheel|sdist):(.+)$")
FORMS = "pypi:NAME==VERSION, wheel:PATH or sdist:PATH"


def is_release(expr: str) -> bool:
    return bool(FORM.match(expr))
