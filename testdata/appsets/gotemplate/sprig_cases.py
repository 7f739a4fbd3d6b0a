"""The sprig function cases of tests/appsets/test_templatefuncs.py, for sprig itself to answer.

Regenerate sprig-expected.json where Go and sprig v3.3.0's sources are at hand (the module proxy
need not be reachable: point go.mod at local copies):
    PYTHONPATH=. python3 testdata/appsets/gotemplate/sprig_cases.py /tmp/sprig.json
    cd testdata/appsets/gotemplate/gen
    go mod edit -require=github.com/Masterminds/sprig/v3@v3.3.0 \\
        -replace=github.com/Masterminds/sprig/v3=/path/to/sprig   # and its requirements alike
    go run -tags sprig . /tmp/sprig.json > ../sprig-expected.json
The file in the repository was made with Go 1.19.8 and sprig v3.3.0 (dario.cat/mergo v1.0.1,
Masterminds/semver v3.3.0, spf13/cast v1.7.0, goutils v1.1.1, shopspring/decimal v1.4.0,
huandu/xstrings v1.4.0), sprig's crypto.go cut to its hash and uuid functions (golang.org/x/crypto
was not at hand) and camelcase left out (xstrings v1.4.0 lacks ToPascalCase). Cases using Argo
CD's own functions (toYaml, fromYaml, fromYamlArray, normalize, slugify) are left out: plain
sprig does not have them.
"""

import json
import re
import sys
from pathlib import Path

from tests.appsets.test_templatefuncs import CASES, DATA, ERRORS

ARGO_ONLY = re.compile(r"\b(toYaml|fromYaml|fromYamlArray|normalize|slugify)\b")


def main() -> None:
    cases = [
        {"name": f"case {i}", "template": template, "data": DATA}
        for i, (template, _) in enumerate(CASES + ERRORS)
        if not ARGO_ONLY.search(template) and "uuidv4" not in template
    ]
    Path(sys.argv[1]).write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
